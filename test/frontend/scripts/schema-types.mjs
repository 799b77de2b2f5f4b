// What a normalized cache must be told of the schema, read from it:
//
//   keyless        the object types without an `id` field, which a cache keeps
//                  inside their parent (urql's graphcache warns on each one
//                  that its `keys` option does not name);
//   possibleTypes  the object types of each interface and union, so that a
//                  fragment on `Budget` under `node` matches exactly rather
//                  than by guess (Apollo Client's InMemoryCache);
//   schema         the schema as graphcache's `schema` option takes it: the
//                  introspection, minified by @urql/introspection. Without
//                  it graphcache writes every fragment under `node` whatever
//                  the type, and warns of each field the data lacks.
//
// setup/schema-types.mjs holds them, written by
//
//   node scripts/schema-types.mjs --write
//
// and the frontend check (checkSchemaTypes) fails when it differs from what
// the schema gives: a type added without an id, or one listed that is gone.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getIntrospectedSchema, minifyIntrospectionQuery } from "@urql/introspection";
import { buildSchema, isInterfaceType, isObjectType, isUnionType } from "graphql";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const moduleFile = path.join(here, "setup", "schema-types.mjs");

/** schemaTypes reads keyless, possibleTypes and schema from a schema's SDL. */
export function schemaTypes(sdl) {
  const schema = buildSchema(sdl);
  const roots = new Set(
    [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter(Boolean).map((t) => t.name),
  );
  const types = Object.values(schema.getTypeMap())
    .filter((t) => !t.name.startsWith("__"))
    .sort((a, b) => a.name.localeCompare(b.name));
  const keyless = types
    .filter((t) => isObjectType(t) && !roots.has(t.name) && !("id" in t.getFields()))
    .map((t) => t.name);
  const possibleTypes = {};
  for (const t of types) {
    if (isInterfaceType(t) || isUnionType(t)) {
      possibleTypes[t.name] = schema
        .getPossibleTypes(t)
        .map((p) => p.name)
        .sort();
    }
  }
  return { keyless, possibleTypes, schema: minifyIntrospectionQuery(getIntrospectedSchema(sdl)) };
}

/** moduleText is setup/schema-types.mjs as it should read for these types. */
export function moduleText({ keyless, possibleTypes, schema }) {
  const list = (names, indent) => names.map((n) => `${indent}"${n}",`).join("\n");
  const possible = Object.entries(possibleTypes)
    .map(([name, names]) => `  ${name}: [\n${list(names, "    ")}\n  ],`)
    .join("\n");
  return `// Generated from graph/testdata/schema.graphql by \`node scripts/schema-types.mjs --write\`
// (in test/frontend); the frontend check fails when it no longer matches the schema.

// The object types without an \`id\`: no identity of their own, so a
// normalized cache keeps each inside its parent.
export const keyless = [
${list(keyless, "  ")}
];

// The object types of each interface and union.
export const possibleTypes = {
${possible}
};

// The introspection of the schema, minified by @urql/introspection, for
// graphcache's \`schema\` option.
export const schema = {
  __schema: {
${Object.entries(schema.__schema)
  .map(([k, v]) =>
    Array.isArray(v) && v.length === 0
      ? `    ${k}: [],`
      : Array.isArray(v)
      ? `    ${k}: [\n${v.map((x) => `      ${JSON.stringify(x)},`).join("\n")}\n    ],`
      : `    ${k}: ${JSON.stringify(v)},`,
  )
  .join("\n")}
  },
};
`;
}

/**
 * checkSchemaTypes compares setup/schema-types.mjs with what the schema file
 * gives, prints each difference and how to update, and returns whether they
 * are equal.
 */
export function checkSchemaTypes({ schemaFile }) {
  const want = schemaTypes(readFileSync(schemaFile, "utf8"));
  let have = "";
  try {
    have = readFileSync(moduleFile, "utf8");
  } catch {
    console.log(`  ✖ ${path.relative(process.cwd(), moduleFile)} is missing`);
  }
  const text = moduleText(want);
  console.log(`  ${want.keyless.length} object types without an id; ${Object.keys(want.possibleTypes).join(", ")} abstract`);
  if (have === text) return true;
  const listed = new Set([...have.matchAll(/^ {2}"(\w+)",$/gm)].map((m) => m[1]));
  for (const t of want.keyless) if (!listed.has(t)) console.log(`  ✖ ${t} has no id and is not in keyless`);
  for (const t of listed) if (!want.keyless.includes(t)) console.log(`  ✖ ${t} is in keyless but is not an object type without an id in the schema`);
  console.log(
    `  ✖ ${path.relative(process.cwd(), moduleFile)} does not match the schema. Run \`node scripts/schema-types.mjs --write\`\n` +
      `    in test/frontend and commit it: the Apollo Client and urql setups of docs/schema.md read it.`,
  );
  return false;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { schema } = JSON.parse(readFileSync(path.join(here, "relay.config.json"), "utf8"));
  const types = schemaTypes(readFileSync(path.resolve(here, schema), "utf8"));
  if (process.argv.includes("--write")) {
    writeFileSync(moduleFile, moduleText(types));
    console.log(`wrote ${path.relative(process.cwd(), moduleFile)}: ${types.keyless.length} keyless types`);
  } else {
    process.stdout.write(moduleText(types));
  }
}
