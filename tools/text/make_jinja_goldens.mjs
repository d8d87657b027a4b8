// Writes tests/data/text/jinja_goldens.json: each case of jinja_cases.mjs rendered by
// @huggingface/jinja, plus the Python Jinja2 output where the two differ.
//
// usage: node tools/text/make_jinja_goldens.mjs OUT_FILE
import { writeFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";
import { jinjaCases } from "./jinja_cases.mjs";

const [outFile] = process.argv.slice(2);
if (!outFile) {
  console.error("usage: node make_jinja_goldens.mjs OUT_FILE");
  process.exit(2);
}

const out = [];
for (const c of jinjaCases) {
  const entry = { name: c.name, template: c.template, context: c.context };
  try {
    entry.huggingface = new Template(c.template).render(c.context);
  } catch (e) {
    entry.huggingface_error = String(e.message ?? e);
  }
  if (c.python !== undefined) {
    entry.python = c.python;
    entry.why = c.why;
  }
  out.push(entry);
}
const lines = ["{", '  "reference": "@huggingface/jinja@0.5.11",', '  "cases": ['];
lines.push(out.map((e) => "    " + JSON.stringify(e)).join(",\n"));
lines.push("  ]", "}");
writeFileSync(outFile, lines.join("\n") + "\n");
console.log(`${out.length} cases, ${out.filter((e) => e.python !== undefined).length} with a Python override, ` +
            `${out.filter((e) => e.huggingface_error).length} that @huggingface/jinja rejects`);
for (const e of out) if (e.huggingface_error) console.log(`  ${e.name}: ${e.huggingface_error}`);
