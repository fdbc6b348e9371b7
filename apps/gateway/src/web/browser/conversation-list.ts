import { byId, el } from './dom';

const CONVERSATIONS = 'rudder.conversations';

/** The conversation list: the keys this browser opened, latest first. */
export const remembered = (): string[] => {
  try {
    const keys: unknown = JSON.parse(localStorage.getItem(CONVERSATIONS) ?? '[]');
    return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string') : [];
  } catch {
    return [];
  }
};

/** Puts `key` first in the list (50 at most) and shows the list, `key` as the open one. */
export function remember(key: string) {
  localStorage.setItem(CONVERSATIONS, JSON.stringify([key, ...remembered().filter((k) => k !== key)].slice(0, 50)));
  renderList(key);
}

/** Shows the list, `open` (the open conversation's key, if any) marked. */
export function renderList(open?: string) {
  byId('conversations').replaceChildren(
    ...remembered().map((key) => {
      const link = el('a', { href: `#${encodeURIComponent(key)}`, ...(key === open ? { 'aria-current': 'true' } : {}) }, key);
      return el('li', {}, link);
    }),
  );
}
