"""Verification for every value of a structural param (`schedc verify --for-all`): a schedule's
transfers elaborated with the param kept a symbol (`symbolic`), the data each rank holds as
Presburger sets in it (`presburger`, with isl), and the driver that proves, refutes or falls
back to instances (`family`)."""
