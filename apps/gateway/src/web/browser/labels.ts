/** How the page words what it shows: quoted texts, turn ids, arguments, where a steer landed. */

/** A text as a control's label quotes it: at most 40 characters. */
export const quote = (text: string) => `“${text.length > 40 ? `${text.slice(0, 39)}…` : text}”`;

/** A turn id as the page shows it: its first eight characters are enough to tell turns apart. */
export const short = (turn: string | null) => (turn && turn.length > 8 ? `${turn.slice(0, 8)}…` : String(turn));

export const landing = (a: { turn: string | null; landed: boolean }) =>
  a.landed ? `landed: turn ${short(a.turn)} takes it at its next step` : 'not landed: it will be answered as a turn of its own';

/** JSON arguments, pretty (as the model sent them when they are not JSON). */
export const pretty = (json: string): string => {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
};

/** What became of a message that no longer waits, as a refused edit's 409 says (`details.state`), shown on the message. */
export const noLongerWaits = (state: string | undefined): string => {
  switch (state) {
    case 'delivered':
      return 'already delivered: its turn started, or the running turn took it. Your edit was not applied.';
    case 'retracted':
      return 'it was retracted: your edit was not applied.';
    case 'discarded':
      return 'it was discarded by a stop: your edit was not applied.';
    case 'collapsed':
      return 'it was collapsed into a later follow-up, whose turn answers it: your edit was not applied.';
    default:
      return 'it no longer waits: your edit was not applied.';
  }
};
