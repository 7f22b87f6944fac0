// The host's C#, part 10 of 11 (PwshlibHost.cs lists the parts): Server's
// runspace slots, cleanup after each call, the environment and the
// prelude.
namespace PwshlibHost
{
    using System;
    using System.Collections;
    using System.Collections.Generic;
    using System.Collections.ObjectModel;
    using System.Diagnostics;
    using System.Globalization;
    using System.IO;
    using System.Management.Automation;
    using System.Management.Automation.Host;
    using System.Management.Automation.Runspaces;
    using System.Reflection;
    using System.Security;
    using System.Text;
    using System.Threading;

    public sealed partial class Server
    {
        // Once the result is built, before it is sent, for a plain request:
        // the next plain request runs in the same runspace, and back to back
        // it waited for the rest of that runspace's reset, so the
        // reset starts now and overlaps the reply's writing too (PutBack).
        // A request with a prelude: its next one runs in the other slot,
        // and the reply goes first (AfterReply puts back). The result is
        // text by now: nothing of the runspace is read for it.
        private void BeforeReply(Outcome outcome)
        {
            if (!outcome.ForPrelude) { PutBack(outcome); }
        }

        // The process directory and the environment back to what they were
        // at start (both are the process's, shared by every runspace, and
        // the reset reads both), then a successful call's session starts
        // its reset on the slot's own thread (ResetInBackground).
        private void PutBack(Outcome outcome)
        {
            // A new runspace takes its location from the process directory.
            try { Environment.CurrentDirectory = homeDirectory; } catch (Exception) { }
            if (outcome.ForPrelude && outcome.Ran != null && !outcome.Rebuild) { KeepEnvironment(outcome.RequestEnvironment); }
            RestoreEnvironment();
            if (outcome.Slot != null && !outcome.Rebuild && outcome.Ran != null)
            {
                outcome.Resetting = true;
                ResetInBackground(outcome.Slot, outcome);
            }
        }

        // Once the result is sent: what the next request needs. A failed or
        // timed-out call's session goes (after a bounded wait for a stop);
        // a successful call's session is being reset (PutBack) while
        // the next request runs in the other slot, which waits for that
        // reset before its own next use (Acquire). The other slot's session
        // is built here when it has none yet (the first call of its kind).
        private void AfterReply(Outcome outcome)
        {
            if (outcome.ForPrelude) { PutBack(outcome); }
            if (outcome.Slot == null) { return; }
            Trace("reply sent");
            // A reset under way (PutBack) owns the outcome: its worker
            // ends the call's pipeline (EndPipeline).
            if (!outcome.Resetting && outcome.Ending != null)
            {
                EndPipeline(outcome);
            }
            if (!outcome.Resetting && outcome.Rebuild)
            {
                bool abandon = CompleteStop(outcome);
                if (abandon) { abandonedPipeline = true; }
                Drop(outcome.Slot, abandon);
                if (outcome.ForPrelude)
                {
                    // The result did not name the prelude: the manager sends
                    // its text with the next request that names it, which
                    // defines it in new sessions.
                    preludeId = null;
                    preludeCode = null;
                }
            }
            Slot[] slots = outcome.ForPrelude ? preludeSlots : plainSlots;
            foreach (Slot other in slots)
            {
                if (other.Session == null && other.Ready.WaitOne(0))
                {
                    try { other.Session = new Session(); } catch (Exception) { other.Session = null; }
                    Trace("after reply: other runspace open");
                }
                if (outcome.ForPrelude) { DefineInBackground(other); }
            }
        }

        // A prelude slot whose session lacks the current prelude gets it on
        // the slot's own thread (Resetter), as its reset: otherwise the first
        // call in the second slot of a fresh host (the second DSC call of
        // an agent run) defined it on its own critical path. The
        // loop waits on Ready before it uses the slot, and GetPreludeSlot
        // defines the text again when the generation moved meanwhile.
        private void DefineInBackground(Slot slot)
        {
            string code = preludeCode;
            int generation = preludeGeneration;
            if (code == null || slot.Session == null || slot.Broken || slot.PreludeGeneration == generation || !slot.Ready.WaitOne(0))
            {
                return;
            }
            // A failure leaves the slot Broken: its session is built again,
            // and the prelude defined again, when it is used.
            OnSlotThread(slot, delegate
            {
                DefinePrelude(slot.Session, code);
                slot.PreludeGeneration = generation;
                Trace("background: prelude defined");
            });
        }

        // The slot's reset, on the slot's own thread (Resetter). Thread safety:
        // LocalRunspace.ResetRunspaceState refuses a runspace that is not
        // Opened and Available (never the case here: the slot's call has
        // ended and the loop waits on Ready before it runs anything there
        // again) and calls InitialSessionState.ResetRunspaceState(context)
        // with that runspace's own ExecutionContext, under the lock of its
        // own InitialSessionState (each Session builds its own with
        // CreateDefault2): it rebuilds that context's global variable table
        // (SessionStateInternal.InitializeSessionStateInternalSpecialVariables,
        // InitializeFixedVariables), its location (SetSessionStateDrive) and
        // its event, transaction and debug managers (ResetManagers), and
        // touches no other runspace's state, in pwsh 7's
        // System.Management.Automation (InitialSessionState.cs,
        // LocalRunspace.cs) and Windows PowerShell 5.1's alike. What it reads
        // of the process, the other slot's call may be changing meanwhile:
        // the process directory (SetSessionStateDrive sets the location to
        // Directory.GetCurrentDirectory()) and the HOME (USERPROFILE, or
        // HOMEDRIVE and HOMEPATH on 5.1) environment variable
        // (InitializeFixedVariables sets $HOME from it); Clean sets both
        // again from the host's own values. The thread's default runspace is
        // the one reset for the time of the reset, as on a pipeline thread,
        // so that anything written goes to that runspace's buffers (cleared
        // before its next call).
        //
        // After a direct call (outcome.Direct), the reset then starts the
        // slot's standby pipeline for its next request (Standby): off the
        // critical path, as the reset. A standby that does not start is no
        // failure: the next request starts its own pipeline.
        private void ResetInBackground(Slot slot, Outcome outcome)
        {
            // A runspace that cannot be reset is not used again (Broken).
            OnSlotThread(slot, delegate
            {
                Trace("reset started");
                EndPipeline(outcome);
                if (outcome.Rebuild) { throw new InvalidOperationException("the call's pipeline did not end"); }
                Clean(slot.Session);
                Trace("reset done");
                if (outcome.Direct)
                {
                    StartStandby(slot.Session);
                    Trace("standby started");
                }
            });
        }

        // Runs work on the slot's own thread (its Resetter, started with the
        // first work), with the slot's runspace the thread's default
        // meanwhile, as on a pipeline thread. The slot is not Ready until the
        // work is done (the loop waits on Ready before it uses the slot
        // again); work that throws leaves the slot Broken.
        private static void OnSlotThread(Slot slot, Action work)
        {
            slot.Ready.Reset();
            if (slot.Resetter == null) { slot.Resetter = new Resetter(); }
            slot.Resetter.Run(delegate
            {
                Runspace previous = Runspace.DefaultRunspace;
                try
                {
                    Runspace.DefaultRunspace = slot.Session.Runspace;
                    work();
                }
                catch (Exception)
                {
                    slot.Broken = true;
                }
                finally
                {
                    Runspace.DefaultRunspace = previous;
                    slot.Ready.Set();
                }
            });
        }

        private static void StartStandby(Session session)
        {
            try
            {
                session.Standby = Standby.Start(session.Runspace);
            }
            catch (Exception)
            {
                session.Standby = null;
            }
        }

        // The slot to run the next request of a kind in: the one not used
        // last, once its reset is finished; its session built again when it
        // has none or its reset failed. Throws when a runspace cannot be
        // built.
        private Slot Acquire(Slot[] slots, ref int next)
        {
            Slot slot = slots[next];
            next = (next + 1) % slots.Length;
            slot.Ready.WaitOne();
            Trace("slot ready");
            if (slot.Broken) { Drop(slot, false); }
            if (slot.Session == null) { slot.Session = new Session(); }
            return slot;
        }

        // A session's state back to where every call starts:
        // ResetRunspaceState rebuilds the global variable table and resets
        // the event, transaction and debug managers (functions and imported
        // modules stay). It also sets the location to the process's current
        // directory, which a call running in the other slot may have
        // changed meanwhile (InitialSessionState.SetSessionStateDrive, in
        // Windows PowerShell 5.1 and pwsh 7), and $HOME from the process
        // environment, which that call may have changed too: both are set
        // again here, the home directory escaped (SetLocation takes a
        // wildcard path; a directory named 'a[1]' is that directory).
        private void Clean(Session session)
        {
            session.Host.Reset();
            session.Runspace.ResetRunspaceState();
            SetLocationHome(session);
            string home = Convert.ToString(session.Runspace.SessionStateProxy.GetVariable("HOME"), CultureInfo.InvariantCulture);
            if (!string.Equals(home, homeVariable, StringComparison.Ordinal))
            {
                // $HOME is ReadOnly: only -Force sets it.
                PowerShell setter = PowerShell.Create();
                try
                {
                    setter.Runspace = session.Runspace;
                    setter.AddCommand("Microsoft.PowerShell.Utility\\Set-Variable").AddParameter("Name", "HOME").AddParameter("Value", homeVariable).AddParameter("Scope", "Global").AddParameter("Force");
                    setter.Invoke();
                }
                finally
                {
                    setter.Dispose();
                }
            }
        }

        // The session's file system location back home, after its reset.
        // SetLocation costs about as much as the reset itself: only when
        // the location is not home already. Asking is cheap (PathInfo.
        // ProviderPath, some 0.004 ms on pwsh 7.6.9) once the root drive is
        // trusted (Session.TrustRootDrive), which spares the mount table read
        // that dominated the check. A home with
        // wildcard characters is set every time.
        private void SetLocationHome(Session session)
        {
            PathIntrinsics path = session.Runspace.SessionStateProxy.Path;
            if (homeHasWildcards || !string.Equals(path.CurrentFileSystemLocation.ProviderPath, homeDirectory, StringComparison.Ordinal))
            {
                path.SetLocation(WildcardPattern.Escape(homeDirectory));
            }
        }

        // After a timed-out call: waits a bounded time for its pipeline to
        // stop. Returns whether its runspace must be abandoned (not
        // disposed: disposing waits for a pipeline that does not stop; it
        // goes with the process).
        private bool CompleteStop(Outcome outcome)
        {
            if (outcome.Stopping == null) { return false; }
            if (!outcome.Stopping.AsyncWaitHandle.WaitOne(StopWaitMs)) { return true; }
            try { outcome.Pipeline.Dispose(); } catch (Exception) { }
            return false;
        }

        // The process environment back to the start snapshot: variables
        // that were not there are removed, changed ones reset. SystemRoot is
        // never removed, even when a call added it: with Protected Event
        // Logging and script block logging on, PowerShell needs it and the
        // process dies without it. A name .NET refuses (the hidden "=C:"
        // entries on Windows) is skipped; restoring never stops the host.
        // SetEnvironmentVariable(name, null) removes the variable on every
        // .NET ("" would leave it defined, empty, on .NET Core).
        private void RestoreEnvironment()
        {
            List<string> added = new List<string>();
            foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables())
            {
                string name = (string)entry.Key;
                if (nameComparer.Equals(name, "SystemRoot") || environmentSnapshot.ContainsKey(name)) { continue; }
                added.Add(name);
            }
            foreach (string name in added)
            {
                try { Environment.SetEnvironmentVariable(name, null); } catch (Exception) { }
            }
            foreach (KeyValuePair<string, string> entry in environmentSnapshot)
            {
                if (!string.Equals(Environment.GetEnvironmentVariable(entry.Key), entry.Value, StringComparison.Ordinal))
                {
                    try { Environment.SetEnvironmentVariable(entry.Key, entry.Value); } catch (Exception) { }
                }
            }
        }

        // What a DSC call (a request with a prelude) left in the process
        // environment becomes the snapshot the host restores, as in the
        // one process where the LCM and PSDesiredStateConfiguration run a
        // configuration's resources: a resource that sets a variable for
        // the process (an environment resource with a process target) is
        // seen by the later ones. Not kept: PSModulePath, which the call
        // extends with the vendored folder for itself alone
        // (Add-PwshlibVendoredModulePath, DirectDsc.Prepare); the names
        // the request's env set, for that call alone; SystemRoot, which
        // the restore never removes. A plain request (Pwsh::Manager#execute)
        // keeps pwshlib 2.x's restore: nothing it sets outlives it.
        private void KeepEnvironment(List<string> requestNames)
        {
            Dictionary<string, string> now = new Dictionary<string, string>(nameComparer);
            foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables())
            {
                now[(string)entry.Key] = (string)entry.Value;
            }
            List<string> gone = new List<string>();
            foreach (string name in environmentSnapshot.Keys)
            {
                if (!now.ContainsKey(name) && !NotKept(name, requestNames)) { gone.Add(name); }
            }
            foreach (string name in gone) { environmentSnapshot.Remove(name); }
            foreach (KeyValuePair<string, string> entry in now)
            {
                if (!NotKept(entry.Key, requestNames)) { environmentSnapshot[entry.Key] = entry.Value; }
            }
        }

        private bool NotKept(string name, List<string> requestNames)
        {
            if (nameComparer.Equals(name, "PSModulePath") || nameComparer.Equals(name, "SystemRoot")) { return true; }
            if (requestNames == null) { return false; }
            foreach (string given in requestNames)
            {
                if (nameComparer.Equals(name, given)) { return true; }
            }
            return false;
        }

        // A request's env, applied inside the call's try, in order: a name
        // given twice takes its last value (as pwshlib 2.x, which set each in
        // turn). A bad entry (a name with '=' or NUL, a value over 32,767
        // characters, which the .NET Framework refuses) throws, and the call
        // fails with an error result. names: each name, added before it is
        // set.
        private static void SetRequestEnvironment(object pairs, List<string> names)
        {
            if (pairs == null) { return; }
            List<object> list = pairs as List<object>;
            if (list == null) { throw new InvalidOperationException("The request has a malformed env entry (a [name, value] pair is expected)"); }
            foreach (object item in list)
            {
                List<object> pair = item as List<object>;
                if (pair == null || pair.Count != 2)
                {
                    throw new InvalidOperationException("The request has a malformed env entry (a [name, value] pair is expected)");
                }
                string name = Text(pair[0]);
                names.Add(name);
                try
                {
                    Environment.SetEnvironmentVariable(name, Text(pair[1]));
                }
                catch (Exception problem)
                {
                    throw new InvalidOperationException("The environment variable '" + name + "' could not be set: " + problem.Message);
                }
            }
        }

        // Runs one execute request: in the prelude's session when it names a
        // prelude (defining it first when it carries its text), else in the
        // plain session.
        private Outcome InvokeRequest(Dictionary<string, object> request)
        {
            Dictionary<string, object> prelude = null;
            object preludeValue = Get(request, "prelude");
            if (preludeValue != null)
            {
                prelude = preludeValue as Dictionary<string, object>;
                if (prelude == null) { prelude = new Dictionary<string, object>(); }
            }
            if (abandonedPipeline)
            {
                // The abandoned pipeline may have changed the environment
                // after the restore that followed its reply.
                RestoreEnvironment();
            }
            Slot slot;
            try
            {
                slot = prelude != null ? GetPreludeSlot(prelude) : Acquire(plainSlots, ref plainNext);
            }
            catch (Exception problem)
            {
                return Failed(prelude != null ? problem.Message : "The host could not create a runspace: " + problem.Message);
            }
            Outcome outcome = InvokeInSession(request, slot.Session, prelude != null);
            Trace("request invoked");
            outcome.Slot = slot;
            outcome.ForPrelude = prelude != null;
            if (prelude != null && !outcome.Rebuild)
            {
                outcome.Result.Add(Field("prelude", Text(Get(prelude, "id"))));
            }
            return outcome;
        }

        private static Outcome Failed(string message)
        {
            Outcome outcome = new Outcome();
            outcome.Result = NewResult(1, null, null, null, message);
            return outcome;
        }

        // The slot for a request that names a prelude, after taking the
        // prelude's text when the request carries it, with the prelude
        // defined in its session: each of the two sessions gets the text
        // the first time it runs a request with it. A new text gives both
        // slots new sessions (the functions of an earlier text would survive
        // any reset).
        private Slot GetPreludeSlot(Dictionary<string, object> prelude)
        {
            string id = Text(Get(prelude, "id"));
            object code = Get(prelude, "code");
            if (code != null)
            {
                preludeId = id;
                preludeCode = Text(code);
                preludeGeneration++;
            }
            if (preludeId == null || !string.Equals(preludeId, id, StringComparison.OrdinalIgnoreCase))
            {
                throw new InvalidOperationException("The prelude '" + id + "' is not defined in this host session; send its code first");
            }
            Slot slot = preludeSlots[preludeNext];
            preludeNext = 1 - preludeNext;
            slot.Ready.WaitOne();
            Trace("slot ready");
            if (slot.Broken || (slot.Session != null && slot.PreludeGeneration != preludeGeneration))
            {
                Drop(slot, false);
            }
            if (slot.Session == null)
            {
                try
                {
                    slot.Session = new Session();
                }
                catch (Exception problem)
                {
                    throw new InvalidOperationException("The host could not create a runspace: " + problem.Message);
                }
                Trace("prelude slot: runspace open");
            }
            if (slot.PreludeGeneration != preludeGeneration)
            {
                try
                {
                    DefinePrelude(slot.Session, preludeCode);
                }
                catch (Exception problem)
                {
                    Drop(slot, false);
                    preludeId = null;
                    preludeCode = null;
                    throw new InvalidOperationException("The host could not define prelude '" + id + "': " + problem.Message);
                }
                slot.PreludeGeneration = preludeGeneration;
                Trace("prelude slot: prelude defined");
            }
            return slot;
        }

        // The prelude's functions defined in a session: its text is run
        // once in the runspace's global scope (AddScript without
        // useLocalScope runs in the runspace's current scope, the global
        // one); functions defined there survive every ResetRunspaceState.
        // The session is then reset like after any call, so that the first
        // call sees no variable the text set. Throws with the reason when the
        // text fails.
        private void DefinePrelude(Session session, string code)
        {
            Standby standby = session.TakeStandby();
            if (standby != null && !standby.Release(Session.StandbyReleaseMs))
            {
                throw new InvalidOperationException("the runspace's standby pipeline did not end");
            }
            PowerShell definer = PowerShell.Create();
            try
            {
                definer.Runspace = session.Runspace;
                definer.AddScript(code);
                definer.Invoke();
                if (definer.Streams.Error.Count > 0)
                {
                    throw new InvalidOperationException(definer.Streams.Error[0].ToString());
                }
                Clean(session);
            }
            finally
            {
                definer.Dispose();
            }
        }
    }

    // The thread a slot's resets run on: a thread waiting on its event
    // wakes at once, where a thread-pool work item started 0.1 to 0.2 ms
    // later in a fresh host (its threads parked), and back to back a plain
    // request waits for the rest of its runspace's reset. One
    // reset at a time: the loop gives the next only once the slot is Ready
    // again.
    internal sealed class Resetter
    {
        private readonly AutoResetEvent wake = new AutoResetEvent(false);
        private Action work;

        public Resetter()
        {
            Thread thread = new Thread(Loop);
            thread.IsBackground = true;
            thread.Name = "pwshlib reset";
            thread.Start();
        }

        public void Run(Action next)
        {
            Interlocked.Exchange(ref work, next);
            wake.Set();
        }

        private void Loop()
        {
            while (true)
            {
                wake.WaitOne();
                Action next = Interlocked.Exchange(ref work, null);
                if (next != null) { next(); }
            }
        }
    }
}
