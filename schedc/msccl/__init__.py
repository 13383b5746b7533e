"""MSCCL XML algorithms ("MSCCL-IR") as a second front-end beside the `.sched` language.

`document` reads the XML with positions and checks it against the executors' rules;
`rounds` turns thread-block steps into rounds of transfers (a step runs in the first round
after everything it depends on); `program` builds the IR, the buffer layout the verifier
checks, and a `Program` on a machine from a `.sched` file.
"""
