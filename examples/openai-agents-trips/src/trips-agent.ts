import { Agent, OpenAIChatCompletionsModel, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { Hotels } from './hotels';

/**
 * The trip planner as the OpenAI Agents SDK's users write it: an `Agent` with `tool()`s, one of
 * which needs approval the framework's own way (`needsApproval`), on the framework's Chat
 * Completions model pointed at OPENAI_BASE_URL. Nothing here knows about Rudder.
 */
export function tripsAgent(hotels = new Hotels()): Agent {
  const searchHotels = tool({
    name: 'search_hotels',
    description: 'The hotels of a city, with their price per night.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }, _context, details) => {
      const found = await hotels.search(city, details?.signal);
      return found.map((h) => `${h.id}: ${h.name}, ${h.pricePerNight} EUR a night`).join('\n') || `no hotels in ${city}`;
    },
  });
  const bookHotel = tool({
    name: 'book_hotel',
    description: 'Books a hotel by its id.',
    parameters: z.object({ hotelId: z.string() }),
    needsApproval: true,
    execute: async ({ hotelId }, _context, details) => {
      const booking = await hotels.book(hotelId, details?.toolCall?.callId ?? hotelId, details?.signal);
      return `booked ${booking.hotelId} (reference ${booking.reference})`;
    },
  });
  const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
  return new Agent({
    name: 'trips',
    instructions: 'You plan trips. Search hotels before you suggest one; book only when asked. The traveller may add to their request while you work: follow their latest words.',
    model: new OpenAIChatCompletionsModel(client, process.env.OPENAI_MODEL ?? 'gpt-4.1-mini'),
    tools: [searchHotels, bookHotel],
  });
}
