#!/usr/bin/python3
"""An HF accelerate training script (accelerate's Accelerator, CPU), written the way accelerate's
own examples are: it knows nothing of accel-launch. A small classifier on a synthetic set; the
seed's loop: Accelerator(gradient_accumulation_steps=...), accelerator.prepare(model, optimizer,
dataloaders, scheduler), `with accelerator.accumulate(model)`, accelerator.backward(loss),
optimizer.step(), scheduler.step(), optimizer.zero_grad(); after each epoch an evaluation with
accelerator.gather_for_metrics and the epoch's mean loss through accelerator.reduce.

Usage: hf_accelerate_train.py [--epochs E] [--steps N] [--hidden H] [--batch B]
                              [--accumulation K] [--samples S] [--eval-samples S] [--stream]
  --steps N stops after N optimizer steps, --steps 0 trains until stopped (either way --epochs
  is ignored); by default it trains --epochs epochs. --stream reads the training set as an
  IterableDataset (accelerate then dispatches its batches from process 0).
  Each process prints one JSON line at the end: its rank, the world size and accelerate's
  distributed type, optimizer steps, micro-steps (batches trained on), samples it was handed
  (training and evaluation), epochs, evaluation batches, the last accuracy and a checksum of the
  parameters (sum, in double).
"""
import argparse
import json
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, IterableDataset, TensorDataset


def make_data(samples: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(samples, 32, generator=generator)
    labels = (features[:, :16].sum(dim=1) > features[:, 16:].sum(dim=1)).long()
    return TensorDataset(features, labels)


class Stream(IterableDataset):
    """A dataset read as a stream (as a streaming or web dataset is): no length, no shuffling."""

    def __init__(self, dataset: TensorDataset):
        self.dataset = dataset

    def __iter__(self):
        return iter(self.dataset)


def training_function(args: argparse.Namespace) -> dict:
    accelerator = Accelerator(gradient_accumulation_steps=args.accumulation)
    set_seed(42)
    if args.stream:  # accelerate then reads it on process 0 and sends each process its slice
        train_dataloader = DataLoader(Stream(make_data(args.samples, 1)), batch_size=args.batch)
    else:
        train_dataloader = DataLoader(make_data(args.samples, 1), batch_size=args.batch,
                                      shuffle=True)
    eval_dataloader = DataLoader(make_data(args.eval_samples, 2), batch_size=args.batch)
    model = torch.nn.Sequential(torch.nn.Linear(32, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + step / 1000))
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler)
    loss_function = torch.nn.CrossEntropyLoss()

    done = {"optimizer_steps": 0, "micro_steps": 0, "samples": 0, "epochs": 0, "eval_batches": 0}
    accuracy = 0.0
    epoch = 0

    def enough() -> bool:
        return args.steps > 0 and done["optimizer_steps"] >= args.steps

    while args.steps >= 0 or epoch < args.epochs:
        model.train()
        total_loss = torch.zeros(())
        for inputs, labels in train_dataloader:
            done["samples"] += len(labels)
            with accelerator.accumulate(model):
                loss = loss_function(model(inputs), labels)
                total_loss += loss.detach()
                accelerator.backward(loss)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            done["micro_steps"] += 1
            if accelerator.sync_gradients:
                done["optimizer_steps"] += 1
                if enough():
                    break
        if enough():
            break
        epoch += 1
        done["epochs"] += 1
        mean_loss = accelerator.reduce(total_loss, reduction="mean")

        model.eval()
        correct = seen = 0
        for inputs, labels in eval_dataloader:
            done["samples"] += len(labels)
            with torch.no_grad():
                predictions = model(inputs).argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, labels))
            correct += (predictions == references).sum().item()
            seen += len(references)
            done["eval_batches"] += 1
        accuracy = correct / max(seen, 1)
        accelerator.print(f"epoch {epoch}: loss {mean_loss.item():.4f} accuracy {accuracy:.3f}")

    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    checksum = sum(p.detach().double().sum().item() for p in unwrapped.parameters())
    return dict(rank=accelerator.process_index, world=accelerator.num_processes,
                distributed_type=accelerator.distributed_type.value, accuracy=accuracy,
                checksum=checksum, **done)


def main() -> int:
    parser = argparse.ArgumentParser(description="HF accelerate training, CPU")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=-1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--accumulation", type=int, default=2)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--eval-samples", type=int, default=512)
    parser.add_argument("--stream", action="store_true", help="the training set as a stream")
    args = parser.parse_args()
    print(json.dumps(training_function(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
