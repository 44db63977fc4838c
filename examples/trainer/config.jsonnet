// Parameters of the training run.
local gaia = import 'gaia.libsonnet';

{
  image: 'pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime',
  workers: 4,
  gpus_per_worker: 1,
  // GPU nodes carry a gpu-model label; the job needs A100s for its memory.
  gpu_model: gaia.config('trainer.gpu_model', 'a100'),
  // Optional: pin the whole job to one zone ("zone=z1"); null lets it float.
  zone: null,
  dataset_path: '/datasets/clicks/2024-05',
  checkpoint_path: '/checkpoints/ranker',
  epochs: 20,
  batch_size: 256,
  learning_rate: 0.001,
  resources: { cpu: '8', memory: '64Gi', disk: '200Gi' },
}
