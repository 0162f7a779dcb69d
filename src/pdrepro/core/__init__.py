"""What every layer shares and no step owns: errors, the console format, roles, units, pins, the strict model
base, the run file reader, the CLI's shared argument types.
"""
