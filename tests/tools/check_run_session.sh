#!/bin/sh
# ctest run_prompt_cache and run_chat (issue 30 item 3): whittle-run's --prompt-cache and -i
# on the default model (CPU, greedy).
#   cache: a miss prefills and saves; the same prompt again restores every token and prints
#     the same answer; a longer prompt that begins with it restores the cached tokens,
#     prefills the rest and prints what a run without the cache prints; a damaged file and
#     one of another KV type are not used (said why) and the answer is unchanged.
#   chat: three turns and a /reset from stdin; the second turn reuses the first's tokens
#     (-v); Ctrl-C during an answer stops it and the chat goes on to /quit, exit status 0.
# Exit 77 (ctest: Skipped) with the reason when the model is missing.
#   messages: --messages (a conversation as JSON) answers as --chat --system, and with
#     --reply-json as a JSON message; tool calls the template writes nothing of are refused.
#   tools: on Qwen2.5-Coder-0.5B, a tool call read out of the reply (--reply-json), and the
#     conversation with it and its result answered again.
#   stop: --stop ends an answer before its text; in -i the next turn, which renders the cut
#     answer, cuts the context back to where the two part (wt_context_truncate) and reuses
#     the tokens before.
# Usage: check_run_session.sh WHITTLE_RUN MODEL WORK_DIR cache|chat|messages|tools|stop
run="$1" model="$2" work="$3" what="$4"
[ -f "$model" ] || { echo "SKIP: $model missing"; exit 77; }
mkdir -p "$work" || exit 1
# A failure prints the tails of what the runs wrote, so that a rare one (a timing, a loaded
# machine) can be told apart afterwards.
fail() {
  echo "FAIL: $*"
  for f in "$work"/err "$work"/chat.err "$work"/int.out "$work"/int.err; do
    [ -f "$f" ] && { echo "--- tail of $f"; tail -n 8 "$f"; }
  done
  exit 1
}

if [ "$what" = cache ]; then
  cache="$work/prompt.cache"
  rm -f "$cache"
  p1="The capital of France is"
  p2="The capital of France is Paris. The capital of Italy is"
  base() { "$run" -m "$model" -t 2 -n 12 "$@" 2>"$work/err"; }
  want1="$(base -p "$p1")" || fail "no-cache run"
  want2="$(base -p "$p2")" || fail "no-cache run of the longer prompt"
  got="$(base -p "$p1" --prompt-cache "$cache" -v)" || fail "first cached run"
  grep -q "not used (no file yet)" "$work/err" || fail "a missing file is not reported as a miss"
  grep -q "prompt cache: saved" "$work/err" || fail "the first run did not save"
  grep -q "state / KV" "$work/err" || fail "-v does not report the state and KV bytes"
  sed -n 's/^prompt cache: state/state/p' "$work/err"
  [ "$got" = "$want1" ] || fail "the saving run's answer differs from a run without the cache"
  got="$(base -p "$p1" --prompt-cache "$cache")" || fail "second cached run"
  grep -q "prompt cache: \([0-9]*\) of the prompt's \1 tokens restored" "$work/err" || fail "the same prompt was not restored whole"
  [ "$got" = "$want1" ] || fail "the restored answer differs: '$got' vs '$want1'"
  got="$(base -p "$p2" --prompt-cache "$cache")" || fail "longer prompt run"
  grep -q "prompt cache: [0-9]* of the prompt's [0-9]* tokens restored" "$work/err" || fail "the prefix was not restored"
  [ "$got" = "$want2" ] || fail "restore + prefill of the rest differs from one prefill: '$got' vs '$want2'"
  got="$(base -p "$p2" --prompt-cache "$cache" --kv-type f32)" || fail "f32 run (the cache is f16, the default)"
  grep -q "not used (WT_ERR_INVALID_ARGUMENT" "$work/err" || fail "a cache of another KV type was used"
  head -c 200 "$cache" > "$cache.cut" && mv "$cache.cut" "$cache"
  got="$(base -p "$p2" --prompt-cache "$cache")" || fail "damaged-cache run"
  grep -q "not used (" "$work/err" || fail "a damaged cache was used"
  [ "$got" = "$want2" ] || fail "the answer after a damaged cache differs"
  echo "PASS: prompt cache saved, restored whole and as a prefix with the same answers; bad files refused"
  exit 0
fi

if [ "$what" = messages ]; then
  # The conversation --chat --system makes, as JSON with a member the template does not read:
  # the same prompt, so the same greedy answer.
  printf '%s' '[{"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is the capital of France?", "name": "ann"}]' > "$work/conv.json"
  want="$("$run" -m "$model" -t 2 -n 12 --chat --system "Be brief." -p "What is the capital of France?" 2>"$work/err")" ||
    fail "--chat run"
  got="$("$run" -m "$model" -t 2 -n 12 --messages "$work/conv.json" 2>"$work/err")" || fail "--messages run"
  [ -n "$got" ] && [ "$got" = "$want" ] || fail "--messages answered '$got', --chat '$want'"
  # --reply-json: the same answer as one JSON message (SmolLM2's template writes no tool
  # calls: all of it is content), its content the answer byte for byte (read with Python's
  # json, the --chat answer from a file: $(...) would drop its trailing newlines).
  "$run" -m "$model" -t 2 -n 64 --chat --system "Be brief." -p "What is the capital of France?" >"$work/want.txt" \
    2>"$work/err" || fail "--chat run for --reply-json"
  "$run" -m "$model" -t 2 -n 64 --messages "$work/conv.json" --reply-json >"$work/got.json" 2>"$work/err" ||
    fail "--reply-json run"
  if command -v python3 >/dev/null; then
    python3 - "$work/want.txt" "$work/got.json" <<'PY' || fail "--reply-json printed $(cat "$work/got.json")"
import json, sys
want = open(sys.argv[1], encoding="utf-8").read()
got = open(sys.argv[2], encoding="utf-8").read()
assert want.endswith("\n") and got.endswith("\n") and got.count("\n") == 1, "one line each"
message = json.loads(got)
assert list(message) == ["role", "content"] and message["role"] == "assistant", message
assert message["content"] == want[:-1] and message["content"], (message["content"], want)
PY
  else
    echo "NOTE: python3 missing: --reply-json's content not compared with the answer"
    grep -q '^{"role": "assistant", "content": "' "$work/got.json" || fail "--reply-json printed $(cat "$work/got.json")"
  fi
  # A reply cut by -n is not read as a whole one: an error, the text on stderr.
  "$run" -m "$model" -t 2 -n 1 --messages "$work/conv.json" --reply-json >"$work/got.json" 2>"$work/err" &&
    fail "a reply cut at -n 1 was read"
  grep -q "error: --reply-json: the reply did not end within -n tokens" "$work/err" || fail "the cut reply's error"
  # A tool call SmolLM2's template writes nothing of: refused, naming the message.
  printf '%s' '[{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Looking.",
    "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}]' > "$work/calls.json"
  "$run" -m "$model" -t 2 -n 4 --messages "$work/calls.json" >/dev/null 2>"$work/err" && fail "dropped tool calls accepted"
  grep -q "WT_ERR_UNSUPPORTED: .*message 1's tool_calls" "$work/err" || fail "the refusal does not name the message"
  echo "PASS: --messages answers as --chat --system, --reply-json as a JSON message; tool calls the template drops are refused"
  exit 0
fi

if [ "$what" = tools ]; then
  # A tool round on Qwen2.5-Coder-0.5B (MODEL): offered a weather tool, the model calls it;
  # --reply-json reads the call out (this model writes it without <tool_call> tags); the call
  # and a result go back in, and the model answers again, read as a message.
  tools='{"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}'
  ask='{"role": "user", "content": "What is the weather like in Paris right now?"}'
  # One turn: the conversation in FILE answered, its reply read back as a message.
  turn() { "$run" -m "$model" -t 2 -n 48 --messages "$1" --chat-template-kwargs "$tools" --reply-json 2>"$work/err"; }
  printf '[%s]' "$ask" > "$work/ask.json"
  call="$(turn "$work/ask.json")" || fail "the first turn"
  printf 'call: %s\n' "$call"
  case "$call" in
    '{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"'*) ;;
    *) fail "no get_weather call for Paris read out of the reply: $call" ;;
  esac
  printf '[%s, %s, %s]' "$ask" "$call" '{"role": "tool", "name": "get_weather", "content": "{\"temperature_c\": 21, \"sky\": \"sunny\"}"}' \
    > "$work/answer.json"
  answer="$(turn "$work/answer.json")" || fail "the second turn"
  printf 'answer: %s\n' "$answer"
  # What the model says then is its own (the 0.5B coder echoes the call and the result): the
  # check is that the conversation with the call read back formats and answers as a message.
  case "$answer" in
    '{"role": "assistant", "content": '*) ;;
    *) fail "the second turn's reply is no message: $answer" ;;
  esac
  echo "PASS: a tool call read out of Qwen2.5's reply; with its result the conversation answers again"
  exit 0
fi

if [ "$what" = stop ]; then
  q="Count from 1 to 10, separated by commas."
  full="$("$run" -m "$model" -t 2 -n 40 --chat -p "$q" 2>"$work/err")" || fail "--chat run"
  # A stop text from the answer itself (the 7th to 10th bytes of its first line): the answer
  # printed is what comes before its first occurrence.
  stop="$(printf '%s\n' "$full" | head -n 1 | cut -c7-10)"
  [ "${#stop}" -eq 4 ] || fail "the answer '$full' is too short to stop in"
  want="${full%%"$stop"*}"
  got="$("$run" -m "$model" -t 2 -n 40 --chat -p "$q" --stop "$stop" 2>"$work/err")" || fail "--stop run"
  printf 'stop at "%s": "%s"\n' "$stop" "$got"
  [ "$got" = "$want" ] || fail "with --stop '$stop' the answer was '$got', want '$want' (the whole: '$full')"
  # A reply that stopped ended: --reply-json reads it, with -n too small for it to end otherwise.
  printf '[{"role": "user", "content": "%s"}]' "$q" > "$work/q.json"
  n_stop=$((${#want} + 4))
  "$run" -m "$model" -t 2 -n "$n_stop" --messages "$work/q.json" --stop "$stop" --reply-json >"$work/got.json" \
    2>"$work/err" || fail "--reply-json after a stop"
  if command -v python3 >/dev/null; then
    python3 - "$want" "$work/got.json" <<'PY' || fail "--reply-json printed $(cat "$work/got.json")"
import json, sys
message = json.loads(open(sys.argv[2], encoding="utf-8").read())
assert message == {"role": "assistant", "content": sys.argv[1]}, (message, sys.argv[1])
PY
  else
    grep -q '^{"role": "assistant", "content": "' "$work/got.json" || fail "--reply-json printed $(cat "$work/got.json")"
  fi
  out="$(printf '%s\nAnd once more.\n' "$q" | "$run" -m "$model" -t 2 -n 40 -i -v --stop "$stop" 2>"$work/chat.err")" ||
    fail "the chat exited with an error"
  printf '%s\n' "$out"
  case "$out" in *"$stop"*) fail "the chat printed the stop text" ;; esac
  grep '^\[the conversation differs from token' "$work/chat.err" || fail "the second turn did not cut the context back"
  second="$(grep '^\[turn:' "$work/chat.err" | sed -n 2p)"
  echo "$second"
  case "$second" in
    "[turn: 0 tokens reused"*) fail "the second turn prefilled the whole conversation again" ;;
    "[turn: "*) ;;
    *) fail "no second turn" ;;
  esac
  echo "PASS: --stop ends the answer before its text; the next turn cuts the context back and reuses the rest"
  exit 0
fi

if [ "$what" = chat ]; then
  rm -f "$work"/int.out "$work"/int.err  # a failure's tails are this run's
  out="$(printf 'What is 2 plus 2?\nAnd 3 plus 3?\n/reset\nSay hello.\n' |
         "$run" -m "$model" -t 2 -n 16 -i -v 2>"$work/chat.err")" || fail "the chat exited with an error"
  printf '%s\n' "$out"
  n_turns="$(grep -c '^\[turn:' "$work/chat.err")"
  [ "$n_turns" -eq 3 ] || fail "$n_turns turns answered, want 3"
  second="$(grep '^\[turn:' "$work/chat.err" | sed -n 2p)"
  echo "$second"
  case "$second" in
    "[turn: 0 tokens reused"*) fail "the second turn prefilled the whole conversation again" ;;
  esac
  grep -q '^\[a new conversation\]' "$work/chat.err" || fail "/reset was not acknowledged"
  third="$(grep '^\[turn:' "$work/chat.err" | sed -n 3p)"
  case "$third" in
    "[turn: 0 tokens reused"*) ;;
    *) fail "after /reset the turn reused tokens: $third" ;;
  esac
  # Ctrl-C while answering: the answer stops, the chat reads the next line.
  fifo="$work/chat.in"
  rm -f "$fifo" && mkfifo "$fifo" || fail "mkfifo"
  "$run" -m "$model" -t 2 -n 4000 -i < "$fifo" > "$work/int.out" 2> "$work/int.err" &
  pid=$!
  trap '' PIPE  # a chat that already ended is reported below, not a killed script
  exec 3> "$fifo"
  echo "Count from 1 to 1000, one number per line." >&3
  # Ctrl-C once the answer streams (its second number printed), not while loading.
  i=0
  while [ "$i" -lt 300 ] && ! grep -q '2' "$work/int.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  kill -INT "$pid"
  sleep 0.5
  echo "/quit" >&3
  exec 3>&-
  wait "$pid"; rc=$?
  rm -f "$fifo"
  [ "$rc" -eq 0 ] || fail "the chat exited with $rc after Ctrl-C"
  grep -q '^\[stopped\]' "$work/int.err" || fail "Ctrl-C did not stop the answer"
  echo "PASS: three turns, the second reusing the first's tokens, /reset, Ctrl-C stops an answer"
  exit 0
fi
echo "usage: $0 WHITTLE_RUN MODEL WORK_DIR cache|chat|messages|tools|stop"; exit 2
