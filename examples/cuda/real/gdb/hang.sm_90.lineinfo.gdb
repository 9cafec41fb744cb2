# hang.sm_90.lineinfo: written by plan.py; capture.sh runs the settings, then `target cudacore CORE`, then the rest
# threads: the spin on the flag (warp 0) = block (0,0,0) thread (0,0,0)
# threads: the barrier (warp 3) = block (0,0,0) thread (100,0,0)
# threads: the loop (warp 7) = block (0,0,0) thread (255,0,0)
# threads: the spin, another block (warp 1) = block (7,0,0) thread (33,0,0)
# threads: the barrier, another block (warp 4) = block (7,0,0) thread (150,0,0)
# threads: the loop, another block (warp 6) = block (7,0,0) thread (200,0,0)
# core: user-triggered (CUDA_ENABLE_USER_TRIGGERED_COREDUMP, CUDA_COREDUMP_PIPE)
set pagination off
set height 0
set width 0
set confirm off
set print elements unlimited
# target cudacore CORE
info cuda kernels
info cuda warps
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (0,0,0) thread (0,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (0,0,0) thread (100,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (0,0,0) thread (255,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (7,0,0) thread (33,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (7,0,0) thread (150,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (7,0,0) thread (200,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
