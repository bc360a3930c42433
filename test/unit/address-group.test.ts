import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../src/domain/address-group.js';

/** The failed-authentication limiters count an IPv6 client by its /64, however the address is written. */
describe('addressGroup', () => {
  it.each([
    ['203.0.113.5', '203.0.113.5'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:3:4:198.51.100.1', '2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['::ffff:203.0.113.5', '203.0.113.5'],
    ['::ffff:cb00:7105', '203.0.113.5'],
    ['203.0.113.5:40001', '203.0.113.5'],
    ['[2001:db8:1:2::1]:40001', '2001:db8:1:2::/64'],
    ['[2001:db8:1:2::1]', '2001:db8:1:2::/64'],
    ['999.0.113.5:1', '999.0.113.5:1'],
    ['unknown', 'unknown'],
    ['', ''],
  ])('%s → %s', (address, group) => {
    expect(addressGroup(address)).toBe(group);
  });

  it('property: every spelling of an IPv6 address, and every address of its /64, is one group; another /64 is another', () => {
    const hextets = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 });
    const full = (h: number[]) => h.map((x) => x.toString(16).padStart(4, '0')).join(':');
    const canonical = (h: number[]) => new URL(`http://[${full(h)}]/`).hostname.slice(1, -1);
    fc.assert(
      fc.property(hextets, hextets, (a, b) => {
        const mapped = (h: number[]) => h.slice(0, 6).every((x, i) => x === (i === 5 ? 0xffff : 0));
        fc.pre(!mapped(a) && !mapped(b)); // IPv4-mapped addresses are their IPv4 address (above)
        const sameNet = [...a.slice(0, 4), ...b.slice(4)];
        const group = addressGroup(full(a));
        expect(addressGroup(canonical(a))).toBe(group);
        expect(addressGroup(full(a).toUpperCase())).toBe(group);
        expect(addressGroup(canonical(sameNet))).toBe(group);
        expect(addressGroup(canonical(b)) === group).toBe(a.slice(0, 4).every((x, i) => x === b[i]));
      }),
      { numRuns: 2000 },
    );
  });
});
