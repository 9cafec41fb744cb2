# lds_tiles.sm_90.lineinfo: written by plan.py; capture.sh runs the settings, then `target cudacore CORE`, then the rest
# threads: first lane = block (1,0,0) thread (0,0,0)
# threads: middle lane = block (1,0,0) thread (0,1,0)
# threads: last lane = block (1,0,0) thread (15,1,0)
# threads: a lane that faulted (tx == 3), the others diverged from it = block (1,0,0) thread (3,0,0)
# threads: another warp of the block (warp 5, the example dump's second warp) = block (1,0,0) thread (5,10,0)
# threads: a thread of another block = block (0,1,0) thread (7,3,0)
set pagination off
set height 0
set width 0
set confirm off
set print elements unlimited
# target cudacore CORE
info cuda kernels
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (1,0,0) thread (0,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (1,0,0) thread (0,1,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (1,0,0) thread (15,1,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (1,0,0) thread (3,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (1,0,0) thread (5,10,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (0,1,0) thread (7,3,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print tx
print tile
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
