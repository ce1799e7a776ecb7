"""MemberProcess: what a store's server process in a test cluster offers (EtcdMember,
ZooKeeperMember): whether it runs, a signal (SIGSTOP, SIGCONT), kill -9 with the process reaped.
The subclass starts `self.proc`."""
from .timings import slack


class MemberProcess:
    proc = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        """kill -9, and the process reaped."""
        self.proc.kill()
        self.proc.wait(timeout=slack(10))
