// Finds `any` in generated TypeScript and says, for each, whether it stands
// where a value a client reads gets its type (a failure) or in one of the few
// positions where generated code needs it and no field's shape is at stake.
//
// It reads the syntax tree, not the text: "any" in a comment or a string is
// not a type, and the path to an offending `any` (BudgetDetailQuery.budget.
// dimensions[]) is what tells a developer which field to fix.
import ts from "typescript";
import { readFileSync } from "node:fs";
import path from "node:path";

// The positions where `any` is allowed, each with the reason printed in the
// summary. Everything else fails.
const ALLOWED = {
  cast: "a cast in generated runtime code (`x as any`), not a declared type",
  constraint: "a type-parameter constraint or default (`T extends DocumentNode<any, any>`): any document",
  pattern: "the pattern of a conditional type (`T extends DocumentNode<infer R, any> ? R : never`)",
  variables:
    "the variables slot of a document type in a helper's signature (useFragment takes a fragment document whatever its variables)",
};

// Document types whose second type argument is the operation's variables.
const DOCUMENT_TYPES = new Set(["DocumentTypeDecoration", "TypedDocumentNode", "DocumentNode"]);

/**
 * Checks files for `any`.
 * @param {string[]} files paths of generated .ts files
 * @returns {{violations: {file: string, line: number, path: string, text: string}[], allowed: Record<string, number>, parseErrors: string[]}}
 */
export function findAny(files) {
  const violations = [];
  const parseErrors = [];
  const allowed = Object.fromEntries(Object.keys(ALLOWED).map((k) => [k, 0]));
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    for (const d of source.parseDiagnostics ?? []) {
      const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      parseErrors.push(`${file}:${line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
    }
    const visit = (node) => {
      if (node.kind === ts.SyntaxKind.AnyKeyword) {
        const why = allowedPosition(node);
        if (why) {
          allowed[why]++;
        } else {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
          violations.push({ file, line: line + 1, path: typePath(node), text: lineText(source, line) });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { violations, allowed, parseErrors };
}

export { ALLOWED };

// allowedPosition names the allowed position `any` stands in, or "" when it
// stands in none.
function allowedPosition(node) {
  let child = node;
  for (let p = node.parent; p; child = p, p = p.parent) {
    switch (p.kind) {
      case ts.SyntaxKind.AsExpression:
        return "cast";
      case ts.SyntaxKind.TypeParameter:
        return "constraint";
      case ts.SyntaxKind.ConditionalType:
        if (p.extendsType === child) return "pattern";
        break;
      case ts.SyntaxKind.TypeReference: {
        const name = p.typeName.getText();
        if (DOCUMENT_TYPES.has(name) && p.typeArguments?.[1] === child && insideSignature(p)) return "variables";
        break;
      }
      case ts.SyntaxKind.TypeAliasDeclaration:
      case ts.SyntaxKind.InterfaceDeclaration:
      case ts.SyntaxKind.VariableStatement:
      case ts.SyntaxKind.SourceFile:
        return "";
    }
  }
  return "";
}

// insideSignature reports whether a type sits in a function's parameter list.
function insideSignature(node) {
  for (let p = node.parent; p; p = p.parent) {
    if (p.kind === ts.SyntaxKind.Parameter) return true;
    if (p.kind === ts.SyntaxKind.TypeAliasDeclaration || p.kind === ts.SyntaxKind.InterfaceDeclaration) return false;
  }
  return false;
}

// typePath names where a type node stands, from its declaration down through
// property names, `[]` for array elements: BudgetDetailQuery.budget.dimensions[].
function typePath(node) {
  const parts = [];
  let child = node;
  for (let p = node.parent; p; child = p, p = p.parent) {
    if (ts.isPropertySignature(p) || ts.isPropertyDeclaration(p)) {
      parts.unshift(p.name.getText().replace(/^['"]|['"]$/g, ""));
    } else if (ts.isArrayTypeNode(p)) {
      parts.unshift("[]");
    } else if (ts.isTypeReferenceNode(p) && /^(Readonly)?Array$/.test(p.typeName.getText())) {
      parts.unshift("[]");
    } else if (ts.isTypeAliasDeclaration(p) || ts.isInterfaceDeclaration(p) || ts.isFunctionDeclaration(p)) {
      parts.unshift(p.name?.getText() ?? "(anonymous)");
      break;
    } else if (ts.isVariableDeclaration(p)) {
      parts.unshift(p.name.getText());
      break;
    }
  }
  return parts.join(".").replace(/\.\[\]/g, "[]");
}

function lineText(source, line) {
  const start = source.getPositionOfLineAndCharacter(line, 0);
  const end = line + 1 < source.getLineStarts().length ? source.getPositionOfLineAndCharacter(line + 1, 0) : source.text.length;
  const text = source.text.slice(start, end).trim();
  return text.length > 160 ? text.slice(0, 157) + "..." : text;
}

/**
 * Type-checks the generated client-preset output with tsc --strict, so that a
 * schema change which makes codegen write invalid TypeScript (a type named
 * like one of its helpers, say) fails here rather than in a frontend's build.
 * @param {string} entry the generated index.ts
 * @returns {string[]} diagnostics, empty when it compiles
 */
export function typeCheck(entry) {
  const options = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2022.d.ts"],
    types: [],
    skipLibCheck: true,
  };
  const program = ts.createProgram([entry], options);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (!d.file) return msg;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    return `${path.relative(process.cwd(), d.file.fileName)}:${line + 1}: ${msg}`;
  });
}
