// The host's C#, part 6 of 11 (PwshlibHost.cs lists the parts): the
// pipeline started ahead of a runspace's next direct DSC call (Standby).
namespace PwshlibHost
{
    using System;
    using System.Collections;
    using System.Collections.Generic;
    using System.Management.Automation;
    using System.Management.Automation.Runspaces;
    using System.Threading;

    // A pipeline started ahead of a runspace's next DSC call.
    // Starting a pipeline costs about half a millisecond on pwsh 7.6.9 (a
    // new pipeline thread, the pipeline's set-up, its command bound)
    // before the call's first statement runs: on a direct call's critical
    // path, a third of what the host adds to the resource's own Get. So
    // after a direct call the slot's reset, on a worker thread between
    // calls, starts the next pipeline: Wait-PwshlibDirectCall waits in
    // Take for the runspace's next request. The loop
    // gives it that request's first steps (secrets, the request read,
    // DirectDsc.Prepare), which run on the pipeline's thread (the runspace
    // is busy: only its SessionState reaches its variables, see
    // RunspaceGlobals), and the pipeline makes the call when Prepare allows
    // it. Otherwise (a request that is not a direct call, a failure before
    // the call) the standby ends without running anything and the request
    // goes the usual way, in a new pipeline.
    public sealed class Standby
    {
        internal const string FunctionName = "Wait-PwshlibDirectCall";

        // The standbys whose pipeline has not taken its work yet, by
        // runspace: Take finds its own through the pipeline thread's default
        // runspace, so that no variable of the call's runspace holds it.
        private static readonly Dictionary<Guid, Standby> waiting = new Dictionary<Guid, Standby>();

        // How many calls a standby made since the process started (a test
        // reads it through a plain request: one AppDomain).
        private static long calls;

        // The standby whose call runs on this thread (Take to Done).
        [ThreadStatic]
        private static Standby current;

        private readonly object gate = new object();
        private readonly Guid runspaceId;
        private Func<RunspaceGlobals, Hashtable> work;
        private bool given;

        internal PowerShell Shell;
        internal IAsyncResult Running;
        internal PSDataCollection<PSObject> Output;
        // Set on the pipeline's thread, before it ends: whether it made the
        // call, and what the request's first steps threw.
        internal volatile bool Called;
        internal Exception Failure;
        // The call the first steps prepared (set on the pipeline's thread),
        // and the signal that it returned (Done): the loop answers then,
        // without waiting for the pipeline's own end (some 0.1 ms on pwsh
        // 7.6.9: scopes left, state events raised, the thread ended).
        internal DirectCall Call;
        internal readonly ManualResetEvent CallDone = new ManualResetEvent(false);

        private Standby(Guid runspaceId)
        {
            this.runspaceId = runspaceId;
        }

        public static long Calls
        {
            get { return Interlocked.Read(ref calls); }
        }

        // Starts the standby in an idle runspace whose prelude defines its
        // function; null when it does not.
        internal static Standby Start(Runspace runspace)
        {
            if (runspace.SessionStateProxy.InvokeCommand.GetCommand(FunctionName, CommandTypes.Function) == null) { return null; }
            Standby standby = new Standby(runspace.InstanceId);
            lock (waiting) { waiting[runspace.InstanceId] = standby; }
            PowerShell shell = PowerShell.Create();
            try
            {
                shell.Runspace = runspace;
                shell.AddCommand(FunctionName);
                // The call's streams merged into its output in order, as
                // DirectDsc.AddTo merges them: the nested call writes to
                // this command's pipes.
                shell.Commands.Commands[0].MergeMyResults(PipelineResultTypes.All, PipelineResultTypes.Output);
                PSDataCollection<PSObject> noInput = new PSDataCollection<PSObject>();
                noInput.Complete();
                standby.Output = new PSDataCollection<PSObject>();
                standby.Running = shell.BeginInvoke<PSObject, PSObject>(noInput, standby.Output);
                standby.Shell = shell;
                return standby;
            }
            catch (Exception)
            {
                lock (waiting) { waiting.Remove(runspace.InstanceId); }
                shell.Dispose();
                throw;
            }
        }

        // Wait-PwshlibDirectCall's wait, on the pipeline's thread: the call
        // to make (its Command and Arguments), or null for none.
        public static Hashtable Take(SessionState state)
        {
            Runspace runspace = Runspace.DefaultRunspace;
            Standby standby = null;
            if (runspace != null)
            {
                lock (waiting)
                {
                    if (waiting.TryGetValue(runspace.InstanceId, out standby)) { waiting.Remove(runspace.InstanceId); }
                }
            }
            if (standby == null) { return null; }
            Func<RunspaceGlobals, Hashtable> next;
            lock (standby.gate)
            {
                while (!standby.given) { Monitor.Wait(standby.gate); }
                next = standby.work;
            }
            if (next == null) { return null; }
            Server.Trace("standby took");
            current = standby;
            try
            {
                Hashtable call = next(new RunspaceGlobals(state, standby.runspaceId));
                Server.Trace("call prepared");
                if (call != null)
                {
                    standby.Called = true;
                    Interlocked.Increment(ref calls);
                }
                return call;
            }
            catch (Exception problem)
            {
                standby.Failure = problem;
                return null;
            }
        }

        // Wait-PwshlibDirectCall's last step, once the call has returned
        // (a call that throws never gets here: the loop then waits for the
        // pipeline's end, as for a new pipeline). Every output record is in
        // Output by then (the pipeline adds each as it is written). What the
        // loop would otherwise read from the runspace after the call is
        // read or done here, through the global scope: the runspace stays
        // busy until the pipeline ends.
        public static void Done(SessionState state)
        {
            Server.Trace("call done");
            Standby standby = current;
            current = null;
            if (standby == null || standby.Call == null) { return; }
            try
            {
                RunspaceGlobals globals = new RunspaceGlobals(state, standby.runspaceId);
                DirectDsc.RestorePreferences(standby.Call, globals);
                standby.Call.LastExitCode = globals.Get("LASTEXITCODE");
                standby.Call.Restored = true;
            }
            catch (Exception)
            {
                standby.Call.Restored = false;
                return;
            }
            standby.CallDone.Set();
        }

        // Hands the request's first steps to the pipeline (null: none, the
        // standby ends). Once.
        internal bool Given
        {
            get { lock (gate) { return given; } }
        }

        internal void Give(Func<RunspaceGlobals, Hashtable> next)
        {
            lock (gate)
            {
                work = next;
                given = true;
                Monitor.PulseAll(gate);
            }
        }

        // Ends the standby without a call. False when its pipeline did not
        // end within waitMs (it is left, with its runspace, to the process).
        internal bool Release(int waitMs)
        {
            Give(null);
            if (!Running.AsyncWaitHandle.WaitOne(waitMs)) { return false; }
            try { Shell.EndInvoke(Running); } catch (Exception) { }
            Shell.Dispose();
            return true;
        }
    }
}
