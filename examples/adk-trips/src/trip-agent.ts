import { FunctionTool, LlmAgent } from '@google/adk';
import { ChatCompletionsLlm } from '@rudder/adk';
import { z } from 'zod';

type Hotel = { id: string; name: string; city: string; pricePerNight: number };

const catalogue: Hotel[] = [
  { id: 'lis-1', name: 'Casa do Rio', city: 'Lisbon', pricePerNight: 120 },
  { id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 },
  { id: 'por-1', name: 'Ribeira Inn', city: 'Porto', pricePerNight: 95 },
];

/**
 * The trip planner as an ADK team writes it: `FunctionTool`s with zod parameters, the booking
 * gated by ADK's own `requireConfirmation` (Rudder parks it as an approval). HOTELS_URL, when
 * set, is the hotels backend: GET ?city=… answers a search (the e2e test holds it open to steer
 * during the call), POST /bookings makes a booking keyed by its call, so a rerun finds it.
 */
const searchHotels = new FunctionTool({
  name: 'search_hotels',
  description: 'Hotels in a city, with their price per night.',
  parameters: z.object({ city: z.string().describe('The city, e.g. Lisbon') }),
  execute: async ({ city }, context) => {
    const url = process.env.HOTELS_URL;
    const hotels = url
      ? ((await (await fetch(`${url}?city=${encodeURIComponent(city)}`, { signal: context?.abortSignal })).json()) as Hotel[])
      : catalogue.filter((h) => h.city.toLowerCase() === city.toLowerCase());
    return hotels.length === 0 ? `no hotels in ${city}` : hotels.map((h) => `${h.id}: ${h.name}, ${h.pricePerNight} EUR a night`).join('\n');
  },
});

const bookHotel = new FunctionTool({
  name: 'book_hotel',
  description: 'Books a hotel by its id. The traveller approves each booking.',
  parameters: z.object({ hotelId: z.string() }),
  requireConfirmation: true,
  execute: async ({ hotelId }, context) => {
    const url = process.env.HOTELS_URL;
    if (url) {
      const response = await fetch(`${url}/bookings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ hotelId, key: context?.functionCallId, pid: process.pid }),
        signal: context?.abortSignal,
      });
      return (await response.json()) as Record<string, unknown>;
    }
    const hotel = catalogue.find((h) => h.id === hotelId);
    if (!hotel) throw new Error(`there is no hotel ${hotelId}`);
    return { reference: `B-${context?.functionCallId ?? hotelId}`, hotel: hotel.name };
  },
});

export const tripAgent = new LlmAgent({
  name: 'trip_planner',
  description: 'Plans trips: finds and books hotels.',
  instruction:
    'You plan trips. Search hotels before you suggest one; book only when asked. ' + 'The traveller may add to their request while you work: follow their latest words.',
  model: new ChatCompletionsLlm(),
  tools: [searchHotels, bookHotel],
});
