"""aspace-dap: a post-mortem GPU debugger speaking the Debug Adapter Protocol."""

__version__ = "0.1.0"
