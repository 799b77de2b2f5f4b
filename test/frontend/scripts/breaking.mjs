// Diffs every version of the golden schema in the git history against the
// one before it, and the working tree's against HEAD's, with graphql-
// inspector, and fails on a breaking change that breaking-changes.txt does
// not acknowledge. Why every version and not just HEAD~1: CI sees only the
// tip of main, and a change lands as several commits; a break in any but the
// last would pass a HEAD~1 diff unseen.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { buildSchema } from "graphql";
import { diff, CriticalityLevel } from "@graphql-inspector/core";

/**
 * Parses the acknowledgement file: one breaking change a line, as
 * `CHANGE_TYPE path: reason`; `#` starts a comment line.
 * @returns {{acks: Map<string, {reason: string, line: number}>, errors: string[]}}
 */
export function readAcks(file) {
  const acks = new Map();
  const errors = [];
  if (!existsSync(file)) return { acks, errors };
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((raw, i) => {
      const text = raw.trim();
      if (text === "" || text.startsWith("#")) return;
      const m = /^([A-Z_]+)\s+([^\s:]+)\s*:\s*(.*)$/.exec(text);
      if (!m) {
        errors.push(`${path.basename(file)}:${i + 1}: not "CHANGE_TYPE path: reason": ${text}`);
        return;
      }
      const [, type, where, reason] = m;
      if (reason.trim() === "") {
        errors.push(`${path.basename(file)}:${i + 1}: ${type} ${where} has no reason; say why clients can take it`);
        return;
      }
      acks.set(key({ type, path: where }), { reason, line: i + 1 });
    });
  return { acks, errors };
}

// key identifies a change by its kind and where it is (FIELD_REMOVED
// Budget.metrics): stable across rebases, unlike a commit, and across
// graphql-inspector's rewordings, unlike its message.
function key(change) {
  return `${change.type} ${change.path ?? "(schema)"}`;
}

function git(args, cwd) {
  return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
}

function tryGit(args, cwd) {
  try {
    return git(args, cwd);
  } catch {
    return null;
  }
}

/**
 * Runs the check and prints what it finds.
 * @param {{schemaFile: string, acksFile: string, log?: (s: string) => void}} opts
 * @returns {Promise<boolean|"skipped">} true when nothing unacknowledged breaks; "skipped" without git
 */
export async function checkBreakingChanges({ schemaFile, acksFile, log = console.log }) {
  const { acks, errors } = readAcks(acksFile);
  for (const e of errors) log(`  ✖ ${e}`);

  const dir = path.dirname(schemaFile);
  const top = tryGit(["rev-parse", "--show-toplevel"], dir)?.trim();
  if (!top) {
    log(`  ! git is not installed or this is not a git checkout: there is no earlier schema to compare with, so this check is skipped`);
    return errors.length === 0 ? "skipped" : false;
  }
  const rel = path.relative(top, path.resolve(schemaFile)).split(path.sep).join("/");
  const shallow = tryGit(["rev-parse", "--is-shallow-repository"], top)?.trim() === "true";
  const hasHead = tryGit(["rev-parse", "--verify", "--quiet", "HEAD"], top) !== null;

  // The versions to compare, oldest first: each commit that changed the file
  // against its first parent, then the working tree against HEAD.
  const steps = [];
  const notes = [];
  const commits = hasHead ? git(["rev-list", "--reverse", "HEAD", "--", rel], top).split("\n").filter(Boolean) : [];
  for (const c of commits) {
    const subject = git(["log", "-1", "--format=%h %s", c], top).trim();
    const parent = tryGit(["rev-parse", "--verify", "--quiet", `${c}^1`], top)?.trim();
    if (!parent) {
      notes.push(
        shallow
          ? `shallow clone: the history before ${subject} is not here, so changes to ${rel} up to that commit ` +
              `are not checked; those after it are (git fetch --unshallow to check all of history)`
          : `${subject}: first commit of the history; nothing before it to compare`,
      );
      continue;
    }
    const before = tryGit(["show", `${parent}:${rel}`], top);
    if (before === null) {
      notes.push(`${subject}: creates ${rel}; nothing before it to compare`);
      continue;
    }
    steps.push({ label: subject, before, after: git(["show", `${c}:${rel}`], top) });
  }
  const committed = hasHead ? tryGit(["show", `HEAD:${rel}`], top) : null;
  const current = readFileSync(schemaFile, "utf8");
  if (committed !== null && committed !== current) {
    steps.push({ label: "uncommitted change (HEAD → working tree)", before: committed, after: current });
  } else if (committed === null) {
    notes.push(`${rel} is not committed yet; nothing to compare it with`);
  }
  for (const n of notes) log(`  · ${n}`);

  const used = new Set();
  const unacknowledged = [];
  let breaking = 0;
  let acknowledged = 0;
  let dangerous = 0;
  let safe = 0;
  for (const step of steps) {
    let changes;
    try {
      changes = await diff(buildSchema(step.before), buildSchema(step.after));
    } catch (err) {
      log(`  ✖ ${step.label}: cannot compare: ${err.message}`);
      unacknowledged.push({ step, change: null });
      continue;
    }
    for (const change of changes) {
      switch (change.criticality.level) {
        case CriticalityLevel.Breaking: {
          breaking++;
          const k = key(change);
          if (acks.has(k)) {
            used.add(k);
            acknowledged++;
          } else {
            unacknowledged.push({ step, change });
          }
          break;
        }
        case CriticalityLevel.Dangerous:
          dangerous++;
          log(`  ! ${step.label}: dangerous: ${change.message}${change.criticality.reason ? ` (${change.criticality.reason})` : ""}`);
          break;
        default:
          safe++;
      }
    }
  }
  log(
    `  ${steps.length} version(s) of ${rel} compared with the one before: ` +
      `${breaking} breaking change(s) (${acknowledged} acknowledged), ${dangerous} dangerous, ${safe} safe`,
  );

  let ok = errors.length === 0;
  if (unacknowledged.length > 0) {
    ok = false;
    log(`\n  ✖ ${unacknowledged.length} breaking change(s) to the schema are not acknowledged:`);
    let last = null;
    for (const { step, change } of unacknowledged) {
      if (step !== last) log(`\n    in ${step.label}:`);
      last = step;
      if (!change) continue;
      log(`      - ${change.message}`);
      if (change.criticality.reason) log(`        why it breaks: ${change.criticality.reason}`);
    }
    const acksRel = path.relative(top, acksFile).split(path.sep).join("/");
    log(
      `\n    A client written against the earlier schema stops working. If that is not intended, restore what\n` +
        `    changed. If it is, add one line per change to ${acksRel}, saying why clients can take it:\n`,
    );
    for (const k of new Set(unacknowledged.filter((u) => u.change).map((u) => key(u.change)))) log(`      ${k}: <why>`);
  }
  const unused = [...acks.keys()].filter((k) => !used.has(k));
  if (unused.length > 0) {
    if (shallow) {
      log(`  · ${unused.length} acknowledgement(s) matched nothing in this shallow history (they may match older commits)`);
    } else {
      ok = false;
      log(`\n  ✖ ${path.basename(acksFile)} acknowledges changes that no version of the schema makes (a typo, or a change undone):`);
      for (const k of unused) log(`      line ${acks.get(k).line}: ${k}`);
    }
  }
  return ok;
}
