/**
 * The source text of each member of a top-level JSON object, exactly as the provider wrote it.
 *
 * JSON.parse turns every number into a double, so an integer beyond 2^53 (a 19-digit activity
 * id, say) comes back rounded, and serializing it again would hand the client — and the
 * cache — another entity's id. The provider's `data` is therefore stored and answered as its
 * own text, cut out of the body, never re-serialized.
 *
 * Call only on text JSON.parse accepted: this scanner relies on it being valid JSON and only
 * tracks what it needs (string boundaries and nesting depth).
 */
export function topLevelMembers(json: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = skipSpace(json, 0);
  if (json[i] !== '{') return out;
  i++;
  for (;;) {
    i = skipSpace(json, i);
    if (json[i] !== '"') return out; // '}' of an empty object, or the end
    const keyEnd = stringEnd(json, i);
    const key = JSON.parse(json.slice(i, keyEnd)) as string;
    i = skipSpace(json, keyEnd);
    i = skipSpace(json, i + 1); // past ':'
    const valueEnd = valueEndAt(json, i);
    // A repeated member: JSON.parse keeps the last one, and so does this.
    out.set(key, json.slice(i, valueEnd));
    i = skipSpace(json, valueEnd);
    if (json[i] !== ',') return out;
    i++;
  }
}

function skipSpace(s: string, i: number): number {
  while (i < s.length && (s[i] === ' ' || s[i] === '\n' || s[i] === '\r' || s[i] === '\t')) i++;
  return i;
}

/** Index just past the string starting at `i` (its opening quote). */
function stringEnd(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === '\\') j++;
    else if (s[j] === '"') return j + 1;
  }
  return s.length;
}

/** Index just past the value starting at `i`. */
function valueEndAt(s: string, i: number): number {
  if (s[i] === '"') return stringEnd(s, i);
  if (s[i] !== '{' && s[i] !== '[') {
    let j = i;
    while (j < s.length && !',}] \n\r\t'.includes(s[j]!)) j++;
    return j;
  }
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    const c = s[j];
    if (c === '"') j = stringEnd(s, j) - 1;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return s.length;
}
