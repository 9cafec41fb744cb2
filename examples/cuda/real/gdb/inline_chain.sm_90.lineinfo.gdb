# inline_chain.sm_90.lineinfo: written by plan.py; capture.sh runs the settings, then `target cudacore CORE`, then the rest
# threads: first lane = block (0,0,0) thread (0,0,0)
# threads: middle lane = block (0,0,0) thread (16,0,0)
# threads: last lane = block (0,0,0) thread (31,0,0)
# threads: the lane whose store faulted (lane 7) = block (0,0,0) thread (7,0,0)
# threads: another warp of the block = block (0,0,0) thread (39,0,0)
# threads: a thread of another block = block (1,0,0) thread (7,0,0)
set pagination off
set height 0
set width 0
set confirm off
set print elements unlimited
# target cudacore CORE
info cuda kernels
info line *$errorpc
info symbol $errorpc
x/4i $errorpc
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
cuda block (0,0,0) thread (16,0,0)
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
cuda block (0,0,0) thread (31,0,0)
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
cuda block (0,0,0) thread (7,0,0)
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
cuda block (0,0,0) thread (39,0,0)
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
cuda block (1,0,0) thread (7,0,0)
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
