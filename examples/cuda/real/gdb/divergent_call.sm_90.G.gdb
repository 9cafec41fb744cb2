# divergent_call.sm_90.G: written by plan.py; capture.sh runs the settings, then `target cudacore CORE`, then the rest
# threads: first lane (even: the other branch) = block (0,0,0) thread (0,0,0)
# threads: middle lane (even) = block (0,0,0) thread (16,0,0)
# threads: last lane (odd, inside settle, diverged from the faulting lanes) = block (0,0,0) thread (31,0,0)
# threads: a lane that faulted inside settle (lane % 4 == 1) = block (0,0,0) thread (5,0,0)
# threads: another warp of the block = block (0,0,0) thread (37,0,0)
# threads: a thread of another block = block (1,0,0) thread (9,0,0)
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
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
cuda block (0,0,0) thread (0,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
cuda block (0,0,0) thread (16,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
cuda block (0,0,0) thread (31,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
cuda block (0,0,0) thread (5,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
cuda block (0,0,0) thread (37,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
cuda block (1,0,0) thread (9,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print x
print lane
print steps
print acc
print gid
print result
print in
print out
print n
print/x lane
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw in
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
frame 1
info args
info locals
print gid
print lane
print x
print result
print steps
print in
print out
print n
frame 0
