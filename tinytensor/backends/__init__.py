"""GPU backends: the CUDA extension's sources (cuda_gpu.cu, cuda_binding.cpp) and its Python bridge."""
