import { describe, expect, it } from 'vitest';
import { inputIdsNamedBy, inputIdsOf } from './input-ids';

describe('the input ids an event names', () => {
  it('an acceptance is about its input and answers it; a retraction is about what it took back and answers the retraction', () => {
    const accepted = { type: 'input.accepted', data: { input: { id: 'c1', kind: 'chat', text: 'hi', messages: ['hi'], subject: 'alice', sentAt: '' }, ahead: 0 } };
    expect(inputIdsNamedBy(accepted)).toEqual({ about: ['c1'], answers: ['c1'] });
    expect(inputIdsOf(accepted)).toEqual(['c1']);
    const retracted = { type: 'input.retracted', data: { input: { id: 'c1', kind: 'chat', text: 'hi' }, retract: 'r1' } };
    expect(inputIdsOf(retracted)).toEqual(['c1', 'r1']);
  });

  it("a turn's end is about the steers it took; a refusal's target and a timeout's decision name nothing", () => {
    const ended = { type: 'turn.ended', data: { turn: 't', status: 'completed', outcome: null, content: '', steered: [{ id: 's1', text: 'x' }, { id: 's2', text: 'y' }] } };
    expect(inputIdsNamedBy(ended)).toEqual({ about: ['s1', 's2'], answers: [] });
    expect(inputIdsOf({ type: 'retract.refused', data: { retract: 'r2', target: 'gone', code: 'not_found' } })).toEqual(['r2']);
    const timedOut = { type: 'approval.decided', data: { turn: 't', step: 0, approval: 'a', callId: 'c', tool: 'x', decision: 'deny', reason: null, arguments: null, subject: null, input: null } };
    expect(inputIdsOf(timedOut)).toEqual([]);
  });

  it("an edit is about the input it edited and answers the edit; its refusal answers the edit, not its target", () => {
    const edited = { type: 'input.edited', data: { edit: 'e1', input: { id: 'c1', kind: 'chat', text: 'new', messages: ['new'] }, revision: 1 } };
    expect(inputIdsNamedBy(edited)).toEqual({ about: ['c1'], answers: ['e1'] });
    const refused = { type: 'edit.refused', data: { edit: 'e2', target: 'c1', code: 'not_found', message: 'x', digest: '0'.repeat(64) } };
    expect(inputIdsNamedBy(refused)).toEqual({ about: [], answers: ['e2'] });
  });

  it('a type this contract does not know names nothing', () => {
    expect(inputIdsNamedBy({ type: 'input.renamed', data: { input: { id: 'x' } } })).toEqual({ about: [], answers: [] });
    expect(inputIdsNamedBy({ type: 'toString', data: {} })).toEqual({ about: [], answers: [] });
  });
});
