import { describe, expect, it } from 'vitest';
import { inputDigest, type InputRecord } from '@rudder/contracts';
import { sameInput, sameText } from './same-input';

const base = { v: 1 as const, conversation: 'c', subject: 'alice', sentAt: '2026-11-30T00:00:00.000Z' };
const chat = (id: string, ...messages: string[]): InputRecord => ({ ...base, type: 'chat', id, messages, onBusy: 'enqueue' });
const steer = (id: string, text: string): InputRecord => ({ ...base, type: 'steer', id, text });

describe('is this the same input again', () => {
  it('an accepted input: the same kind and the same messages, in order', () => {
    const kept = { kind: 'chat', text: 'a\n\nb', messages: ['a', 'b'] };
    expect(sameInput(kept, chat('x', 'a', 'b'))).toBe(true);
    expect(sameInput(kept, chat('x', 'b', 'a'))).toBe(false);
    // The same joined text in other messages is another input.
    expect(sameInput(kept, chat('x', 'a\n\nb'))).toBe(false);
    expect(sameInput({ kind: 'steer', text: 'a', messages: ['a'] }, steer('x', 'a'))).toBe(true);
    expect(sameInput({ kind: 'steer', text: 'a', messages: ['a'] }, chat('x', 'a'))).toBe(false);
  });

  it('a refused input: the same kind and the digest of its text (a refusal keeps no text)', () => {
    expect(sameInput({ kind: 'chat', digest: inputDigest('a\n\nb') }, chat('x', 'a', 'b'))).toBe(true);
    expect(sameInput({ kind: 'chat', digest: inputDigest('a') }, chat('x', 'b'))).toBe(false);
    expect(sameInput({ kind: 'steer', digest: inputDigest('a') }, chat('x', 'a'))).toBe(false);
  });

  it('what kept only a text (a steer decision, a view from before messages or digests) is compared by it', () => {
    expect(sameInput({ kind: 'steer', text: 'a' }, steer('x', 'a'))).toBe(true);
    expect(sameInput({ kind: 'steer', text: 'a' }, steer('x', 'b'))).toBe(false);
    expect(sameInput({ kind: 'chat', text: 'a\n\nb', messages: [] }, chat('x', 'a', 'b'))).toBe(true);
  });

  it('a refusal is this text by its digest, or by the text it kept before digests', () => {
    expect(sameText({ digest: inputDigest('hello') }, 'hello')).toBe(true);
    expect(sameText({ digest: inputDigest('hello'), text: 'other' }, 'other')).toBe(false);
    expect(sameText({ text: 'hello' }, 'hello')).toBe(true);
    expect(sameText({}, 'hello')).toBe(false);
  });

  it('a kept field that is null (a view of a record that lacks it) is not compared: the next one that was kept is', () => {
    const messages = { kind: 'chat', text: 'a\n\nb', messages: ['a', 'b'] };
    expect(sameInput({ ...messages, digest: null }, chat('x', 'a\n\nb'))).toBe(false);
    expect(sameInput({ ...messages, digest: null }, chat('x', 'a', 'b'))).toBe(true);
    expect(sameInput({ kind: 'chat', text: 'a\n\nb', messages: null }, chat('x', 'a', 'b'))).toBe(true);
    expect(sameInput({ kind: 'chat', text: 'a\n\nb', messages: null }, chat('x', 'a'))).toBe(false);
    expect(sameText({ digest: null, text: 'hello' }, 'hello')).toBe(true);
  });

  it('a control kept with no text is the same input by its kind alone', () => {
    const stop: InputRecord = { ...base, type: 'stop', id: 'x', discardPending: false };
    expect(sameInput({ kind: 'stop' }, stop)).toBe(true);
    expect(sameInput({ kind: 'stop', text: null, messages: null, digest: null }, stop)).toBe(true);
    expect(sameInput({ kind: 'retract' }, stop)).toBe(false);
  });

  it('messages are the same only all of them, as many', () => {
    const kept = { kind: 'chat', messages: ['a', 'b'] };
    expect(sameInput(kept, chat('x', 'a'))).toBe(false);
    expect(sameInput(kept, chat('x', 'a', 'b', 'c'))).toBe(false);
    expect(sameInput(kept, chat('x', 'a', 'c'))).toBe(false);
  });
});
