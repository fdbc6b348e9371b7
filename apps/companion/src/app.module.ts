import { Module, type DynamicModule } from '@nestjs/common';
import type { Pool } from '@rudder/runtime';
import { CompanionController, POOL } from './http/companion.controller';

@Module({})
export class AppModule {
  static forRoot(pool: Pool): DynamicModule {
    return { module: AppModule, controllers: [CompanionController], providers: [{ provide: POOL, useValue: pool }] };
  }
}
