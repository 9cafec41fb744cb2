# scratch_struct.sm_90.G: written by plan.py; capture.sh runs the settings, then `target cudacore CORE`, then the rest
# threads: first lane = block (2,0,0) thread (0,0,0)
# threads: middle lane = block (2,0,0) thread (16,0,0)
# threads: last lane = block (2,0,0) thread (31,0,0)
# threads: a lane that faulted (threadIdx.x & 7 == 2), the others diverged from it = block (2,0,0) thread (2,0,0)
# threads: another warp of the block = block (2,0,0) thread (40,0,0)
# threads: a thread of another block = block (0,0,0) thread (5,0,0)
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
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (2,0,0) thread (0,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (2,0,0) thread (16,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (2,0,0) thread (31,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (2,0,0) thread (2,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (2,0,0) thread (40,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
cuda block (0,0,0) thread (5,0,0)
cuda kernel grid block thread device sm warp lane
bt
info args
info locals
print state
print probe
print out
print n
print dt
print gid
print p
print history
print damping
print pick
print step
print axis
print neighbor
print cursor
print sample
print *cursor
print p.pos
print p.neighbors
print history[step]
print &p
print/x pick
print/x p.flags
print threadIdx
print blockIdx
print blockDim
print gridDim
print warpSize
x/8xw &history
x/8xw cursor
x/8xw probe
info registers R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 pc
