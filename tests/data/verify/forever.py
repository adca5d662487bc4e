"""Never stops (no optimizer step, no DataLoader for the step limit to count), and leaves a child process of its
own running: the verifier's timeout must kill both. argv[1]: where to write the child's pid."""
import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(sys.argv[1], "w") as handle:
    handle.write(str(child.pid))
import torch  # after the child exists: under load this import alone can outlast the verifier's timeout

total = torch.zeros(())
while True:
    total += 1
    time.sleep(0.05)
