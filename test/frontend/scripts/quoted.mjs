// docs/schema.md shows the Apollo Client, urql and Relay setups a frontend
// should copy; the run-time tests (runtime/) import the same files from
// setup/. checkQuotedSetups holds the two equal: each setup file, but the
// generated schema-types.mjs, must be a fenced block of docs/schema.md as
// it is, byte for byte.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const docFile = path.resolve(here, "../../docs/schema.md");

/** fencedBlocks returns the text of each ```js block of a Markdown file. */
export function fencedBlocks(markdown) {
  return [...markdown.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** checkQuotedSetups prints each setup file docs/schema.md lacks and returns whether there is none. */
export function checkQuotedSetups() {
  const blocks = new Set(fencedBlocks(readFileSync(docFile, "utf8")));
  const dir = path.join(here, "setup");
  const files = readdirSync(dir).filter((f) => f.endsWith(".mjs") && f !== "schema-types.mjs").sort();
  let ok = files.length > 0;
  for (const f of files) {
    if (blocks.has(readFileSync(path.join(dir, f), "utf8"))) {
      console.log(`  docs/schema.md quotes setup/${f}`);
    } else {
      console.log(
        `  ✖ docs/schema.md has no \`\`\`js block equal to setup/${f}: copy the file into its block\n` +
          `    (docs/schema.md, "Caches and clients") so that what a frontend copies is what the tests run`,
      );
      ok = false;
    }
  }
  return ok;
}
