"""A notebook-style session with Muster's Python client, cell by cell, as a
user would type it: submit a two-replica job, wait for it, read each
replica's log, then see what a rejected spec says. Run by
muster_client_test.py against a real `muster dev` cluster ($MUSTER_SERVER;
the credential from $MUSTER_TOKEN_FILE, as on a user's machine). Prints
what a notebook would show; exits non-zero on anything unexpected.
"""

import sys

import muster

# In [1]: connect (the server and the token come from the environment)
c = muster.Client()
print("server", c.servers[0])

# In [2]: a two-replica job; each replica says who it is
job = c.submit(command=["/bin/sh", "-c", "echo replica $MUSTER_REPLICA_INDEX of $MUSTER_NUM_REPLICAS; sleep 1"],
               replicas=2, gpus=1, name="notebook", time_limit="5m", labels={"team": "notebook"})
print("submitted", job["id"], job["state"])

# In [3]: wait for it
done = c.wait(job["id"], timeout=120)
print("ended", done["state"])
assert done["state"] == "COMPLETED", done

# In [4]: its logs, one per replica
for replica in (0, 1):
    text = c.logs(job["id"], replica=replica)
    print("log %d: %s" % (replica, text.strip()))
    assert text.strip() == "replica %d of 2" % replica, text

# In [5]: a spec the server refuses: what, where and why
try:
    c.submit(command=["true"], gpus=-1)
except muster.MusterError as e:
    print("refused", e.status, e.code, e.field, "-", e.message)
    assert e.status == 400 and e.code == "Invalid" and e.field == "spec.resources.gpus", e
else:
    sys.exit("a spec with gpus: -1 was accepted")

# In [6]: the job is in the listing, by state
names = [j["name"] for j in c.jobs(state="COMPLETED")]
print("completed", names)
assert "notebook" in names
mine = c.jobs(selector="team=notebook")
assert [j["id"] for j in mine] == [job["id"]], mine
print("ok")
