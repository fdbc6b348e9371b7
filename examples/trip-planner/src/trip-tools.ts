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
