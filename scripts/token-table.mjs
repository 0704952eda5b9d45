// Builds src/doors/embeddings/cl100k_base.bin, the table the Worker decodes OpenAI's cl100k_base
// token ids with (LangChain's OpenAIEmbeddings sends ids by default, issue 34), from js-tiktoken's
// ranks, pinned by package-lock.json: the npm registry is reachable where OpenAI's blob host is
// not. Run by `make setup`; the .bin is not committed.
//
// Layout (little-endian), read by src/doors/embeddings/token_ids.py with no parsing:
//   b"cl100k\0\0"  then  uint32 count  uint32 reserved (0)
//   uint32 offsets[count + 1]           token i is bytes[offsets[i]:offsets[i + 1]]
//   bytes                               every token's bytes, by id; an id with no token
//                                       (100256, 100261-100275) is empty
// Ids 0-100255 are the byte-pair tokens, the rest the special tokens as their text, as
// tiktoken's decode() gives them.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ranks from "js-tiktoken/ranks/cl100k_base";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const OUT = join(ROOT, "src", "doors", "embeddings", "cl100k_base.bin");
export const MAGIC = Buffer.from("cl100k\0\0", "latin1");
// The byte-pair tokens cl100k_base has: fewer or more means js-tiktoken changed its format.
const MERGEABLE = 100256;

// "<label> <first id> <base64 token> <base64 token> ...", one line per run of ids, as
// js-tiktoken's own constructor reads it.
const tokens = new Map();
for (const line of ranks.bpe_ranks.split("\n")) {
  if (!line) continue;
  const [, first, ...encoded] = line.split(" ");
  encoded.forEach((b64, i) => tokens.set(Number.parseInt(first, 10) + i, Buffer.from(b64, "base64")));
}
if (tokens.size !== MERGEABLE || Math.max(...tokens.keys()) !== MERGEABLE - 1) {
  throw new Error(`js-tiktoken's cl100k_base has ${tokens.size} tokens, expected ${MERGEABLE} (ids 0-${MERGEABLE - 1})`);
}
for (const [text, id] of Object.entries(ranks.special_tokens)) tokens.set(id, Buffer.from(text, "utf8"));

const count = Math.max(...tokens.keys()) + 1;
const offsets = Buffer.alloc(4 * (count + 1));
const parts = [];
let at = 0;
for (let id = 0; id < count; id++) {
  offsets.writeUInt32LE(at, 4 * id);
  const bytes = tokens.get(id);
  if (bytes) { parts.push(bytes); at += bytes.length; }
}
offsets.writeUInt32LE(at, 4 * count);
const header = Buffer.alloc(16);
MAGIC.copy(header, 0);
header.writeUInt32LE(count, 8);
const blob = Buffer.concat([header, offsets, ...parts]);

mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT + ".tmp", blob);
renameSync(OUT + ".tmp", OUT);
const version = JSON.parse(readFileSync(join(ROOT, "node_modules", "js-tiktoken", "package.json"), "utf8")).version;
console.log(`token-table: ${count} ids, ${blob.length} bytes into ${OUT.slice(ROOT.length + 1)} (js-tiktoken ${version})`);
