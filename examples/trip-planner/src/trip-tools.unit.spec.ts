import { describe, expect, it } from 'vitest';
import { Hotels } from './hotels';
import { TripTools } from './trip-tools';

describe('the trip planner’s compare_cities', () => {
  const context = (windDown: AbortSignal) => ({ conversation: 'c', turn: 't', callId: 'c1', subject: 'alice', signal: new AbortController().signal, windDown, pending: 1, queued: false });

  it('compares every city when nobody asks it to wind down', async () => {
    const tools = new TripTools(new Hotels());
    expect(await tools.compareCities({ cities: ['Lisbon', 'Porto'] }, context(new AbortController().signal))).toBe('Lisbon: Alfama Rooms, 85 EUR\nPorto: Ribeira Inn, 95 EUR');
  });

  it('winds down: once windDown is raised it answers the cities compared so far, and says what it left', async () => {
    const windDown = new AbortController();
    const hotels = new Hotels();
    const search = hotels.search.bind(hotels);
    // The person moves on while the first city is being compared.
    hotels.search = async (city, signal) => {
      windDown.abort();
      return search(city, signal);
    };
    const answer = await new TripTools(hotels).compareCities({ cities: ['Lisbon', 'Porto', 'Faro'] }, context(windDown.signal));
    expect(answer).toBe('Lisbon: Alfama Rooms, 85 EUR\n(stopped before Porto: the user moved on; 2 cities not compared)');
  });
});
