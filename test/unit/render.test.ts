import { describe, expect, it } from 'vitest';
import { withRequestId, type Answer } from '../../src/domain/answer.js';

const answer = (body: string): Answer => ({ status: 200, headers: {}, body });
const OURS = 'req_01HZZZZZZZZZZZZZZZZZZZZZZZ';

describe('withRequestId: a relayed provider envelope carries the gateway request id', () => {
  it('replaces the success and the error envelope id, and nothing else, byte for byte', () => {
    const body = '{"request_id": "prov-1","data":{"id":123456789012345678901,"note":"request_id prov-1"},"meta":{}}';
    expect(withRequestId(answer(body), OURS).body).toBe(body.replace('"prov-1"', `"${OURS}"`));
    const err = '{"error":{"code":"NOT_FOUND","message":"m","request_id":"p.2(x)"}}';
    expect(JSON.parse(withRequestId(answer(err), OURS).body).error.request_id).toBe(OURS);
  });

  it('leaves bodies that are not an envelope, or already carry the id, as they are', () => {
    for (const body of ['not json "request_id"', '[{"request_id":"x"}]', '{"data":1}', `{"request_id":"${OURS}"}`, '{"request_id":7}']) {
      const a = answer(body);
      expect(withRequestId(a, OURS)).toBe(a);
    }
  });
});
