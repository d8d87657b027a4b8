// The strings every golden tokenizer is asked to encode. Each case is {name, text} or, for byte
// strings that are not valid UTF-8, {name, hex}. Deterministic: the "random" cases come from a
// seeded generator, so re-running make_goldens.mjs reproduces the committed files.

function mulberry32(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const english = [
  "Hello world",
  "Hello, world! How are you today?",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you'll like it; they've said we'd go, and she's right: it's done.",
  "DON'T SHOUT. IT'S LOUD. WE'LL SEE. YOU'RE LATE. I'VE GOT IT. HE'D KNOW. I'M HERE.",
  "Don't, can't, won't, shouldn't've, y'all, o'clock, rock 'n' roll",
  "\"Quoted\" and 'single-quoted' text, with (parentheses) and [brackets] and {braces}.",
  "Visit https://huggingface.co/docs/tokenizers or mail someone@example.com today.",
  "state-of-the-art, well-known, e-mail, co-operate -- and an em—dash … ellipsis",
  "Mr. Smith went to Washington D.C. on Jan. 5th at 3:30 p.m.",
  "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
  "CamelCaseIdentifiersLikeThis and snake_case_like_this and SCREAMING_SNAKE",
  "A sentence ending with spaces   ",
  "   A sentence starting with spaces",
  "Multiple sentences. Another one! And a question? Yes.",
  "The café serves crème brûlée and jalapeño nachos; naïve coöperation.",
  "He said: «Bonjour» — and left.",
  "Price: $19.99 (was $24.99), save 20%! #deal @store &co.",
  "Line one\nLine two\nLine three",
  "Paragraph one.\n\nParagraph two after a blank line.\n\n\nAnd three newlines.",
  "Tabs\tbetween\twords\tand\ttrailing\t",
  "Windows line endings\r\nare here\r\nand here",
  "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS !@#",
  "lowercase only sentence without punctuation",
  "i.e. e.g. etc. vs. cf.",
  "To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer",
  "Emphasis with *asterisks* and _underscores_ and `backticks`.",
  "O'Reilly's book isn't O'Neil's.",
];

const code = [
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"hello, %s\\n\", \"world\");\n\treturn 0;\n}\n",
  "for (let i = 0; i < arr.length; ++i) { sum += arr[i] * 2; }",
  "const f = async (x) => { await sleep(100); return x?.y ?? 'default'; };",
  "{\"name\": \"qlinear\", \"version\": [0, 1, 0], \"tags\": {\"a\": true, \"b\": null}}",
  "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%son' ORDER BY id DESC;",
  "if [ -f \"$HOME/.bashrc\" ]; then source ~/.bashrc; fi && echo $PATH | tr ':' '\\n'",
  "<div class=\"container\"><p id='x'>Hello &amp; welcome</p><br/></div>",
  "\\begin{equation} E = mc^2 \\quad \\int_0^\\infty e^{-x^2} dx = \\frac{\\sqrt{\\pi}}{2} \\end{equation}",
  "| col1 | col2 |\n|------|------|\n| a    | b    |",
  "    indented with four spaces\n        and eight\n\t\tand two tabs",
  "x+=1;y-=2;z*=3;w/=4;a%=5;b<<=1;c>>=2;d&=e|f^g;",
  "std::vector<std::unique_ptr<Foo>> v; v.emplace_back(std::make_unique<Foo>(42));",
  "fn main() -> Result<(), Box<dyn Error>> { println!(\"{:?}\", vec![1, 2, 3]); Ok(()) }",
  "regex = r'^(?P<year>\\d{4})-(?P<month>\\d{2})$'",
  "# Comment line\n// another\n/* block */\n<!-- html -->",
  "class Foo(Bar):\n    \"\"\"Docstring.\"\"\"\n\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n",
  "0x7fffffff 0b1010 0o755 1e-9 3.14f 42ULL",
  "git commit -m \"fix: handle CRLF\" && git push origin main",
  "a==b!=c<=d>=e&&f||g!h",
  "print('héllo wörld', end='')\r\n",
  "    \n    \n",
  "function() {\n}\n\n\n\n}",
  "key: value\nlist:\n  - item1\n  - item2\nnested:\n  deep: {a: 1}",
];

const cjk = [
  "你好，世界！",
  "我们今天去北京天安门广场。",
  "机器学习是人工智能的一个分支，它使计算机能够从数据中学习。",
  "こんにちは世界",
  "日本語のテキストとカタカナとひらがなを混ぜた文章です。",
  "東京都渋谷区で会議があります。",
  "안녕하세요 세계",
  "한국어 문장은 띄어쓰기를 사용합니다.",
  "中文English混合text测试123",
  "全角文字：ＡＢＣ１２３！？",
  "「引用」と『二重引用』、そして【括弧】。",
  "𠀀𠀁𠀂 rare CJK extension B",
  "繁體中文與简体中文",
  "漢字かな交じり文",
  "ｶﾀｶﾅ half-width katakana",
  "中华人民共和国成立于1949年10月1日。",
  "我爱你 我愛你 사랑해 愛してる",
  "第一章　序論",
  "这是一个很长的中文句子，用来测试分词器在处理没有空格的连续汉字时的行为是否与参考实现完全一致。",
];

const scripts = [
  "مرحبا بالعالم",
  "اللغة العربية جميلة جداً",
  "السَّلَامُ عَلَيْكُمْ",
  "١٢٣٤٥ أرقام عربية",
  "שלום עולם",
  "Привет, мир! Как дела?",
  "Γειά σου Κόσμε",
  "नमस्ते दुनिया",
  "สวัสดีชาวโลก",
  "Xin chào thế giới",
  "Tiếng Việt có dấu: ắ ằ ẳ ẵ ặ",
  "ሰላም ዓለም",
  "Здравствуйте, товарищи! Ёлка.",
  "फ़ारसी: سلام دنیا",
];

const emoji = [
  "😀",
  "I love pizza 🍕🍕🍕!",
  "👨‍👩‍👧‍👦 family",
  "👩🏽‍💻 woman technologist medium skin",
  "🏳️‍🌈 rainbow flag",
  "🇺🇸🇯🇵🇩🇪 flags",
  "1️⃣ 2️⃣ #️⃣ keycaps",
  "❤️ red heart with VS16 and ❤ without",
  "👍🏻👍🏼👍🏽👍🏾👍🏿",
  "🧑‍🤝‍🧑 people holding hands",
  "😀😃😄😁😆😅🤣😂🙂🙃",
  "Text🙂between🙃emoji",
  "🐻‍❄️ polar bear",
  "👁️‍🗨️ eye in speech bubble",
];

const combining = [
  "e\u0301 e\u0300 e\u0302",
  "A\u030a vs \u00c5 vs \u212b",
  "Z\u0351\u0358a\u0341l\u0315g\u0336o\u0362 text",
  "\u1100\u1161\u11a8 decomposed hangul",
  "\ufb01ne \ufb02ow ligatures",
  "\u216b roman numeral and \u2460 circled",
  "n\u0303 and \u00f1",
  "\u0915\u094d\u0937 conjunct",
  "o\u0308\u0304 stacked",
  "caf\u0065\u0301 au lait",
];

const whitespace = [
  " ",
  "  ",
  "   ",
  "    ",
  "        ",
  "                ",
  "\t",
  "\t\t\t",
  "\n",
  "\n\n",
  "\n\n\n\n",
  "\r\n",
  " \t \n ",
  "word  word   word    word",
  "word\t\tword\n\nword",
  "trailing   ",
  "nbsp\u00a0here",
  "ideographic\u3000space",
  "line\u2028separator\u2029para",
  "mongolian\u180evowel",
  "zero\u200bwidth\u200cjoiners\u200d",
  "bom\ufeffhere",
  "vertical\u000btab\u000cformfeed",
  "next\u0085line",
  "en\u2002em\u2003thin\u2009hair\u200a",
  " leading and trailing ",
  "\n leading newline and space",
  "a \n b \n\n c",
];

const digits = [
  "1234567890",
  "3.14159265358979",
  "1,000,000",
  "2024-01-01T12:34:56Z",
  "\u0660\u0661\u0662\u0663\u0664",
  "\uff11\uff12\uff13",
  "x\u00b2 + y\u00b3",
  "\u00bd \u00bc \u00be",
  "123456789012345678901234567890",
  "0x1F 0XFF",
  "1e-10 6.02e23",
  "v1.2.3-beta.4",
  "12 345 6789",
  "Call 555-0123 or +1 (800) 555-0199",
  "\u0967\u0968\u0969 devanagari digits",
  "4\uff14\u0664\u09ea mixed fours",
];

const special = [
  "<|begin_of_text|>Hello",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
  "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
  "<|endoftext|>",
  "text<|endoftext|>more text",
  "<s>[INST] What is 2+2? [/INST]",
  "<s> leading space after bos",
  "</s>",
  "a</s>b<s>c",
  "<unk>",
  "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
  "<\uff5cbegin\u2581of\u2581sentence\uff5c>Hi<\uff5cUser\uff5c>Hello<\uff5cAssistant\uff5c>",
  "<|im_start|><|im_end|><|im_start|>",
  " <|im_end|> ",
  "<think>\nreasoning\n</think>\n\nanswer",
  "<tool_call>{\"name\": \"f\"}</tool_call>",
  "<|im_start",
  "<s",
  "< s >",
  "<|eot_id|><|eot_id|>",
  "<|reserved_special_token_5|>",
  "<pad><eos><mask>",
];

const invalid = [
  { name: "lone_ff", hex: "ff" },
  { name: "bad_in_middle", hex: "616263feff646566" },
  { name: "lone_continuation", hex: "80" },
  { name: "truncated_cjk_end", hex: "e4bd" },
  { name: "truncated_cjk_mid", hex: "e4bd78e4bda0" },
  { name: "overlong_slash", hex: "c0af" },
  { name: "encoded_surrogate", hex: "eda080" },
  { name: "above_max", hex: "f4908080" },
  { name: "truncated_emoji", hex: "f09f98" },
  { name: "mixed", hex: "48656c6c6f20f09f9880c3e4b8ad2077" },
  { name: "many_continuations", hex: "808182838485" },
  { name: "latin1_text", hex: "636166e9206e61ef7665" },
];

const misc = [
  "",
  "'s",
  "'S",
  "'\u017f long s",
  "\u01c5 titlecase digraph",
  "\u0130stanbul \u0130I\u0131i",
  "nul\u0000char",
  "ctrl\u0001\u001f\u007fchars",
  "\u{10ffff} max code point",
  "\ue000 private use",
  "\u0378 unassigned",
  "a".repeat(300),
  "\uff28\uff45\uff4c\uff4c\uff4f",
  "x" + " y".repeat(100),
  "\u00df STRASSE stra\u00dfe",
  "\u0391\u03b8\u03ae\u03bd\u03b1 \u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2",
  "----------------------------------------",
  "!!!???...,,,;;;:::",
  "\\\\ backslashes \\n not a newline",
  "a\u0000\u0000b",
];

// Aimed at the options of the synthetic tokenizers (added-token flags, normalizers, splits).
const targeted = [
  "hello world",
  "hello, world",
  "helloworld",
  "say hello!",
  "ahello hello_there",
  "a [MASK] b",
  "a[MASK]b",
  "a   [MASK]   b",
  "[MASK][MASK]",
  "\t[MASK]\n",
  "<x>  y <x>y",
  "x<|special|>y <|special|>",
  "HELLO World WORLD",
  "\u00c0\u00c9\u00ce \u01c5 \u0130",
  "\ufb01 \u2460 \uff48\uff45\uff4c\uff4c\uff4f",
  "12-34-56 a-b-c",
  "3.14, 2.71; 1,2.3",
  "  leading and trailing  ",
  "multiple   spaces\t\ttabs\n\nlines",
  "[INST] hi [/INST]",
  "<s>[INST]x[/INST]</s>",
  "unknown \ud83e\udd84 chars \u2603",
  "r\u00e9sum\u00e9 na\u00efve",
  "the cat hello world there",
  "abab ab",
];

// Random strings over a mix of scripts, whitespace and symbols.
function randomCases(count, seed) {
  const rnd = mulberry32(seed);
  const pools = [
    [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x0a, 0x0a], [0x09, 0x09],
    [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
    [0x4e00, 0x9fff], [0x3040, 0x30ff], [0xac00, 0xd7a3], [0x2000, 0x206f],
    [0x1f300, 0x1faff], [0x300, 0x36f], [0xff00, 0xffef], [0x20000, 0x2a6df],
  ];
  const out = [];
  for (let i = 0; i < count; ++i) {
    const len = 1 + Math.floor(rnd() * 40);
    let s = "";
    for (let j = 0; j < len; ++j) {
      const [lo, hi] = pools[Math.floor(rnd() * pools.length)];
      let cp = lo + Math.floor(rnd() * (hi - lo + 1));
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
    out.push({ name: `random_${i}`, text: s });
  }
  return out;
}

function named(prefix, list) {
  return list.map((text, i) => ({ name: `${prefix}_${i}`, text }));
}

export const goldenStrings = [
  ...named("english", english),
  ...named("code", code),
  ...named("cjk", cjk),
  ...named("script", scripts),
  ...named("emoji", emoji),
  ...named("combining", combining),
  ...named("whitespace", whitespace),
  ...named("digits", digits),
  ...named("special", special),
  ...invalid.map((c) => ({ name: `invalid_${c.name}`, hex: c.hex })),
  ...named("misc", misc),
  ...named("targeted", targeted),
  ...randomCases(30, 20261201),
];
