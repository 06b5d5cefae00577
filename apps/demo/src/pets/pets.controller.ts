import { Controller, Get, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { PetParams, type PetView } from './dto/pet.dto';
import { PetsService } from './pets.service';

@Controller('pets/:id')
export class PetsController {
  constructor(private readonly pets: PetsService) {}

  @Get()
  get(@Param() { id }: PetParams): Promise<PetView> {
    return this.pets.view(id);
  }

  @Post('feed')
  feed(@Param() { id }: PetParams): Promise<PetView> {
    return this.pets.feed(id);
  }

  @Post('cards/accelerate')
  @HttpCode(HttpStatus.OK)
  accelerate(@Param() { id }: PetParams): Promise<PetView> {
    return this.pets.accelerate(id);
  }

  @Post('cards/auto-feed')
  @HttpCode(HttpStatus.OK)
  autoFeed(@Param() { id }: PetParams): Promise<PetView> {
    return this.pets.holdAutoFeed(id);
  }
}
