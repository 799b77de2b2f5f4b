// Runs the graphql-http server audit against the GraphQL endpoint given as
// the first argument, and prints one line per result:
//   <ok|notice|warn|error> <id> <name> - <reason>
// then a summary. It exits non-zero when a MUST (error) or SHOULD (warn)
// audit fails; MAY audits (notice) are reported but do not fail.
import { auditServer } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs <graphql url>');
  process.exit(2);
}
const results = await auditServer({ url });
let failed = 0;
for (const r of results) {
  const line = `${r.status} ${r.id} ${r.name}`;
  console.log(r.status === 'ok' ? line : `${line} - ${r.reason}`);
  if (r.status === 'error' || r.status === 'warn') failed++;
}
const counts = {};
for (const r of results) counts[r.status] = (counts[r.status] || 0) + 1;
console.log(`audit: ${results.length} audits: ` +
  Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', '));
process.exit(failed ? 1 : 0);
