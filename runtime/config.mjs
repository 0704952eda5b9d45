// What wrangler would give the Worker locally: [vars] of the chosen environment, then
// .dev.vars.<env> (or else .dev.vars) on top, and the [assets] directory.
import fs from "node:fs";
import path from "node:path";
import { parse } from "smol-toml";

export function parseDevVars(text) {
  const vars = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/);
    if (!m) continue;
    let value = m[2].trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\"/g, '"');
    } else {
      value = value.replace(/\s+#.*$/, "");
    }
    vars[m[1]] = value;
  }
  return vars;
}

export function loadConfig(root, envName) {
  const toml = parse(fs.readFileSync(path.join(root, "wrangler.toml"), "utf8"));
  let section = toml;
  if (envName) {
    section = toml.env?.[envName];
    if (!section) throw new Error(`wrangler.toml has no [env.${envName}]`);
  }
  const vars = Object.fromEntries(
    Object.entries(section.vars ?? {}).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
  );
  const candidates = envName ? [`.dev.vars.${envName}`, ".dev.vars"] : [".dev.vars"];
  const devVarsFile = candidates.map((f) => path.join(root, f)).find((f) => fs.existsSync(f));
  if (devVarsFile) Object.assign(vars, parseDevVars(fs.readFileSync(devVarsFile, "utf8")));
  const assets = (section.assets ?? toml.assets)?.directory;
  return {
    main: path.join(root, toml.main),
    vars,
    devVarsFile,
    assetsDir: assets ? path.resolve(root, assets) : null,
    aiBinding: (section.ai ?? (envName ? null : toml.ai))?.binding ?? null,
  };
}
