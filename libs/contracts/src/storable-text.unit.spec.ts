import { describe, expect, it } from 'vitest';
import { isStorableText, StorableString, storableJson, storableText } from './storable-text';

describe('storable text', () => {
  it('refuses NUL and lone surrogates, and accepts paired surrogates and ordinary controls', () => {
    expect(['a\u0000b', '\ud800', 'x\udfff', '\udc00\ud800', 'ok\ud83d'].map(isStorableText)).toEqual([false, false, false, false, false]);
    expect(['', 'plain', '😀 emoji', 'tab\tline\nfeed\u0001', '\\u0000 written out'].map(isStorableText)).toEqual([true, true, true, true, true]);
    expect(StorableString.safeParse('a\u0000').error?.issues[0].message).toMatch(/NUL characters \(U\+0000\) or lone surrogates/);
  });

  it('replaces each unstorable code unit by U+FFFD and keeps pairs', () => {
    expect(storableText('a\u0000b\ud800c😀\udc00')).toBe('a\ufffdb\ufffdc😀\ufffd');
  });

  it('makes JSON storable in values and keys, and leaves storable JSON exactly as JSON.stringify writes it', () => {
    const value = { text: 'a\u0000', ['k\ud800']: ['\udc00', 1, null, { deep: 'x\u0000' }], ok: '😀', escaped: '\\u0000' };
    expect(JSON.parse(storableJson(value))).toEqual({
      text: 'a\ufffd',
      'k\ufffd': ['\ufffd', 1, null, { deep: 'x\ufffd' }],
      ok: '😀',
      escaped: '\\u0000',
    });
    const plain = { a: 'b', n: [1, 2], t: '\\ud800 as text' };
    expect(storableJson(plain)).toBe(JSON.stringify(plain));
    // Storable JSON is JSON.stringify's own, objects with a toJSON of their prototype's included.
    const url = { at: new URL('https://example.com/a'), when: new Date(0) };
    expect(storableJson(url)).toBe(JSON.stringify(url));
    expect(storableJson(undefined)).toBeUndefined();
    expect(storableJson('\udbff')).toBe('"\ufffd"');
    expect(storableJson(['\ud83d\ude00', 'x\udfff'])).toBe('["😀","x\ufffd"]');
  });
});
