import { Injectable } from '@nestjs/common';

export type Hotel = { id: string; name: string; city: string; pricePerNight: number };
export type Booking = { reference: string; hotel: Hotel; nights: number };

/**
 * The team's own service (a repository or an HTTP client in real life): hotels to search, and
 * bookings. A booking is keyed by the tool call that made it, so a call that runs again after
 * a crash (same call id) finds its booking instead of making a second one.
 *
 * HOTELS_URL, when set, is asked for the rates of a search (GET ?city=…, answered with a JSON
 * array of hotels): the example's test holds that request open to steer during the call.
 */
@Injectable()
export class Hotels {
  private readonly bookings = new Map<string, Booking>();
  private readonly catalogue: Hotel[] = [
    { id: 'lis-1', name: 'Casa do Rio', city: 'Lisbon', pricePerNight: 120 },
    { id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 },
    { id: 'por-1', name: 'Ribeira Inn', city: 'Porto', pricePerNight: 95 },
  ];

  async search(city: string, signal: AbortSignal): Promise<Hotel[]> {
    const url = process.env.HOTELS_URL;
    if (url) return (await fetch(`${url}?city=${encodeURIComponent(city)}`, { signal })).json() as Promise<Hotel[]>;
    return this.catalogue.filter((h) => h.city.toLowerCase() === city.toLowerCase());
  }

  book(hotelId: string, nights: number, idempotencyKey: string): Booking {
    const earlier = this.bookings.get(idempotencyKey);
    if (earlier) return earlier;
    const hotel = this.catalogue.find((h) => h.id === hotelId);
    if (!hotel) throw new Error(`there is no hotel ${hotelId}`);
    const booking = { reference: `B-${this.bookings.size + 1}`, hotel, nights };
    this.bookings.set(idempotencyKey, booking);
    return booking;
  }
}
