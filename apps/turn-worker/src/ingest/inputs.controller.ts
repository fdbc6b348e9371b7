import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Topics } from '@rudder/contracts';
import { ASSIGNED, type PartitionBatch, type PartitionsAssigned } from '@rudder/runtime';
import { TurnWorker } from '../turn-worker.service';

/** The worker's handlers on its transport: batches of agent.inputs, and the partitions assigned. */
@Controller()
export class InputsController {
  constructor(@Inject(TurnWorker) private readonly worker: TurnWorker) {}

  @EventPattern(Topics.inputs)
  ingest(@Payload() batch: PartitionBatch): Promise<void> {
    return this.worker.ingest(batch);
  }

  @EventPattern(ASSIGNED)
  assigned(@Payload() assignment: PartitionsAssigned): Promise<void> {
    return this.worker.assigned(assignment);
  }
}
