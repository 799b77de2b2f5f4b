// graphql-codegen's client preset over the operations in operations/, against
// the schema the gateway serves: the golden file TestSchemaGolden keeps, named
// once, in relay.config.json.
import { readFileSync } from "node:fs";
import type { CodegenConfig } from "@graphql-codegen/cli";

const { schema } = JSON.parse(readFileSync(new URL("./relay.config.json", import.meta.url), "utf8"));

const config: CodegenConfig = {
  schema,
  documents: ["operations/**/*.graphql"],
  generates: {
    "out/codegen/": {
      preset: "client",
      config: {
        // Every custom scalar of the schema, mapped. With strictScalars a
        // scalar added to the schema without a line here is an error rather
        // than a silent `any`.
        scalars: {
          Date: "string",
          DateTime: "string",
          JSON: "unknown",
          Int64: "string",
        },
        strictScalars: true,
        // Enums as unions of their values: no runtime objects, and the types
        // read like the values on the wire.
        enumsAsTypes: true,
        useTypeImports: true,
      },
    },
  },
};

export default config;
