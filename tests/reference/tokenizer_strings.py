"""The strings the tokenizer fixtures encode, shared by make_tokenizer_fixture.py (HF
tokenizers, byte-level BPE) and make_spm_fixture.py (SentencePiece): scripts, numbers,
whitespace runs, code, emoji sequences, special-token texts and long runs, plus random
concatenations of fragments."""
import random

FIXED = [
    "", " ", "  ", "a", "Hello", "Hello world", " Hello world", "Hello world!", "hello  world",
    "The quick brown fox jumps over the lazy dog.",
    "It's a test: don't, can't, won't, I'm, you're, we've, they'll, he'd.",
    "IT'S DON'T I'M YOU'RE WE'VE THEY'LL HE'D", "It'S dOn'T i'M yOu'Re We'vE tHeY'lL hE'D",
    "'s 't 're 've 'm 'll 'd", "'S 'T 'RE 'VE 'M 'LL 'D", "''s '''t 's's", "'ſ 'ſt x'ſ", "rock'n'roll",
    "O'Neil's dog's bone", "'", "''", "'x", "' s", "'\u2019s", "it\u2019s",
    "naïve café résumé coöperate", "Straße größer Maß", "Ünïcödé ÀÉÎÕÜ",
    "Привет, мир! Как дела?", "Γειά σου Κόσμε", "שלום עולם", "مرحبا بالعالم", "سلام دنیا",
    "नमस्ते दुनिया", "বাংলা ভাষা", "ਪੰਜਾਬੀ", "தமிழ் மொழி", "తెలుగు", "ಕನ್ನಡ", "മലയാളം",
    "ภาษาไทย สวัสดี", "ພາສາລາວ", "ქართული ენა", "Հայերեն", "አማርኛ", "ᏣᎳᎩ", "ᚠᚢᚦᚨᚱᚲ",
    "こんにちは世界", "カタカナとひらがな", "你好，世界！", "中文字符测试。", "繁體中文測試",
    "한국어 텍스트입니다", "Tiếng Việt có dấu", "Türkçe İıŞşĞğ", "Ελληνικά ΆΈΉΊΌΎΏ",
    "e\u0301 a\u0308 n\u0303", "A\u030a\u0301\u0323", "\u0301start with a combining mark",
    "Z\u0351\u0359a\u0352l\u0357g\u0353o", "\u0915\u094d\u0937", "\u0e01\u0e34\u0e4a",
    "😀", "😀😃😄", "👍🏽 👍🏿", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "❤️ ♥ ❣", "🇯🇵🇺🇸",
    "1️⃣ 2️⃣ #️⃣", "🧑🏽\u200d💻 coding", "emoji😀inside😃words", "🤖🤖🤖🤖🤖🤖🤖🤖",
    "0", "1", "12", "123", "1234", "12345", "1234567890", "3.14159", "-42", "+1 (555) 123-4567",
    "1,000,000", "2024-01-15T10:30:00Z", "v1.2.3", "0x1F600", "1e-10", "abc123def", "123abc",
    " 1", "  1", "a 1", "a  1", "a   1", "1 2 3", "1  2", "x=1+2", "$100", "100%",
    "١٢٣ ٤٥٦", "१२३४", "১২৩", "๑๒๓", "Ⅻ Ⅳ ⅷ", "½ ¾ ⅓", "² ³ ¹", "①②③", "𝟘𝟙𝟚",
    "\t", "\n", "\r\n", "\n\n", "\n\n\n", " \n", "\n ", " \n ", "a\nb", "a\n\nb", "a\r\nb",
    "line1\r\nline2\r\n", "a \n b", "a  \n  b", "a\t\tb", "\ta", "  \ta", "a\t", "a   ",
    "trailing space ", "trailing spaces   ", "   leading", "\u00a0nbsp", "a\u00a0b", "a\u3000b",
    "a\u2028b\u2029c", "a\x0bb\x0cc", "a\x85b", "a\u200bb", "a\u200db", "a\ufeffb",
    "\x00", "a\x00b", "\x01\x02\x1b[31m", "a\x1cb\x1dc\x1ed\x1f", "\x7f", " \t\n\r\x0b\x0c",
    "tabs\tand\nnewlines\r\nmixed \t \n ", "   \n\n   \t\t  x",
    "def foo(x):\n    return x * 2\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "for (auto& [k, v] : map) { std::cout << k << \"->\" << v << '\\n'; }",
    "fn main() { let v: Vec<i32> = (0..10).collect(); println!(\"{:?}\", v); }",
    "const f = async (a, b) => { await Promise.all([a(), b()]); };",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<div class=\"x\"><a href='/y?z=1&w=2'>link</a></div>",
    "#!/bin/bash\nset -euo pipefail\necho \"${HOME}\" | grep -E '^/h' && exit 0\n",
    "x += 1; y -= 2; z *= 3; w /= 4; a %= 5; b <<= 6; c >>= 7; d ^= e;",
    "if (a != b && c == d || !e) { /* comment */ } // line comment",
    "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}",
    "https://example.com/path/to/page?query=value&other=123#fragment",
    "user@example.com", "C:\\Users\\name\\file.txt", "~/.config/app/settings.toml",
    "$$\\frac{a}{b} = \\sum_{i=0}^{n} x_i^2$$", "∀x ∈ ℝ: x² ≥ 0", "→ ← ↑ ↓ ⇒ ⇔",
    "...", "!!!", "???", "?!", "---", "___", "***", "===", "~~~", "@#$%^&*()", "«quotes» „quotes“",
    "¿Qué? ¡Sí!", "—em dash—", "…ellipsis…", "·middle·dot·",
    # case changes, title case, modifier letters and marks inside words (GPT-4o's regex)
    "HELLOworld CamelCaseWord iPhone XMLHttpRequest getHTTPResponseCode ABC DEF",
    "\u01c5ungla \u01c8ubljana \u01cbaj \u1f88\u1f00", "\u02b0\u02b2a \u02b0A a\u02b0 A\u02b0b", "\u00aa\u00ba x\u00aay",
    "DON'T WON'TS You'RE x'S", "e\u0301E\u0301 \u0301\u0301x A\u0301b\u0301C", "\u3042\u30a2\u4e00a\u4e00A",
    "path/to/file\n/x", "a!/\n/b", "x)/\r\n/", " ///\n\n", "1/2 3//4", "word/ \nnext",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>",
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text", "<|im_start|><|im_end|>", "<|im_start|<|im_end|>", "<|im_start",
    "|im_end|>", "<filename>main.py<file_sep>", "<repo_name>x<reponame>y<gh_stars>10",
    " <|im_start|> ", "<|im_start|>  \n", "a<|im_end|>b", "<<|im_end|>>", "<|im_end|>1<|im_end|>",
]

# Long inputs: BPE must stay fast on words with thousands of bytes.
LONG = [
    "a" * 2000, "ab" * 700, "supercalifragilisticexpialidocious" * 30, "1234567890" * 40,
    " " * 300, "\n" * 200, " \n" * 100, "=" * 400, "🙂" * 150, "中文" * 300, "é" * 500,
    "word " * 300, "x" * 1000 + " " + "y" * 1000,
]

FRAGMENTS = [
    "hello", "World", "the", "The", "naïve", "Straße", "Привет", "мир", "Γειά", "שלום", "مرحبا",
    "नमस्ते", "こんにちは", "世界", "한국어", "ไทย", "e\u0301", "a\u0308\u0301", "İ", "ǅ", "ß",
    "0", "7", "42", "1234567", "3.14", "٣٤٥", "१२३", "Ⅻ", "½", "²", "①",
    ".", ",", "!?", "...", "'", "''", "\"", "(", ")", "{}", "[", "]", "<", ">", "/*", "->", "::",
    "&&", "\\", "@", "#", "$", "%", "^", "~", "`", "—", "…", "«", "»", "¿", "·", "_", "-", "+",
    " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "   \n", " \t ", "\r", "\u00a0",
    "\u3000", "\u2028", "\x0b", "\x85", "\u200b",
    "'s", "'S", "'re", "'RE", "'Ve", "'ll", "'LL", "'d", "'D", "'m", "'t", "'ſ",
    "😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "❤️", "🇯🇵", "1️⃣",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<filename>", "<|im_start", "|im_end|>",
    "\x00", "\x1c", "\x7f",
]


def random_cases(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 14)
        seps = ["", "", " ", "\n"]
        out.append("".join(rng.choice(FRAGMENTS) + rng.choice(seps) for _ in range(k)))
    return out
