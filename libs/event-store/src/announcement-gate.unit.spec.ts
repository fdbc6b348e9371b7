import { describe, expect, it } from 'vitest';
import { AnnouncementGate } from './announce';

describe('AnnouncementGate', () => {
  it('closes once the notification queue is half full and opens again below a quarter; a failed check changes nothing', async () => {
    let usage: number | Error = 0;
    const logged: string[] = [];
    const log = { warn: (msg: string) => logged.push(`warn ${msg}`), info: (msg: string) => logged.push(`info ${msg}`) } as never;
    const gate = new AnnouncementGate('rudder_announcements_x', async () => {
      if (usage instanceof Error) throw usage;
      return usage;
    }, { log, everyMs: 60_000 });
    try {
      expect(gate.channel()).toBe('rudder_announcements_x');
      usage = 0.49;
      await gate.check();
      expect(gate.channel()).toBe('rudder_announcements_x');
      usage = 0.5;
      await gate.check();
      expect(gate.channel()).toBeNull();
      usage = new Error('the database went away');
      await gate.check();
      expect(gate.channel()).toBeNull();
      usage = 0.3;
      await gate.check();
      expect(gate.channel()).toBeNull();
      usage = 0.24;
      await gate.check();
      expect(gate.channel()).toBe('rudder_announcements_x');
      expect(logged.map((l) => l.split(' ')[0])).toEqual(['warn', 'info']);
    } finally {
      gate.stop();
    }
  });
});
