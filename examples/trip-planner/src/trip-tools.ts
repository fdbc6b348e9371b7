import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AgentTool, type ToolContext } from '@rudder/turn-worker';
import { Hotels } from './hotels';

/** The trip planner's tools: methods of a provider, so they use the services Nest injects. */
@Injectable()
export class TripTools {
  constructor(@Inject(Hotels) private readonly hotels: Hotels) {}

  @AgentTool({ name: 'search_hotels', description: 'Hotels in a city, with their price per night.', parameters: z.object({ city: z.string().min(1) }) })
  async searchHotels({ city }: { city: string }, { signal }: ToolContext): Promise<string> {
    const found = await this.hotels.search(city, signal);
    return found.length === 0 ? `no hotels in ${city}` : found.map((h) => `${h.id}: ${h.name}, ${h.pricePerNight} EUR a night`).join('\n');
  }

  /**
   * A long tool that winds down (docs/agents.md, "Winding down"): it compares the cities one by
   * one, and when the person moves on (an interrupting chat, a graceful stop) it answers with
   * the cities it compared so far instead of making them wait for the rest.
   */
  @AgentTool({
    name: 'compare_cities',
    description: 'Compares the cheapest hotel of each city, one city at a time (slow).',
    parameters: z.object({ cities: z.array(z.string().min(1)).min(1).max(20) }),
  })
  async compareCities({ cities }: { cities: string[] }, { signal, windDown }: ToolContext): Promise<string> {
    const lines: string[] = [];
    for (const city of cities) {
      if (windDown.aborted) return `${lines.join('\n')}\n(stopped before ${city}: the user moved on; ${cities.length - lines.length} cities not compared)`.trim();
      const cheapest = (await this.hotels.search(city, signal)).sort((a, b) => a.pricePerNight - b.pricePerNight)[0];
      lines.push(cheapest ? `${city}: ${cheapest.name}, ${cheapest.pricePerNight} EUR` : `${city}: no hotels`);
    }
    return lines.join('\n');
  }

  @AgentTool({
    name: 'book_hotel',
    description: 'Books a hotel for a number of nights.',
    parameters: z.object({ hotelId: z.string(), nights: z.number().int().min(1).max(30) }),
  })
  async bookHotel({ hotelId, nights }: { hotelId: string; nights: number }, { callId }: ToolContext): Promise<string> {
    // The call id is the same on every run of this call: the booking is made once.
    const booking = this.hotels.book(hotelId, nights, callId);
    return `booked ${booking.hotel.name} for ${booking.nights} nights: ${booking.reference}`;
  }
}
