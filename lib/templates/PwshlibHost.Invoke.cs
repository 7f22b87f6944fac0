// The host's C#, part 11 of 11 (PwshlibHost.cs lists the parts): Server
// running one request in a runspace, and the result it answers.
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
        // Runs the request's code in the session, which the previous call's
        // reset left clean (PutBack: variables reset, location at home, the
        // environment the snapshot). Plain requests (forPrelude false): the
        // pipeline output goes through Out-String -Stream to the host
        // (PipelineSink), so that stdout is everything the code showed, in order
        // (pipeline output, native programs' output, Write-Host,
        // Write-Information, "WARNING: " lines, error records,
        // [Console]::Out). Requests with a prelude (the DSC invocation):
        // stdout is the pipeline output alone, the one line of JSON, and
        // whatever the code writes to the host or the console goes to
        // native_stdout, never into that line.
        private Outcome InvokeInSession(Dictionary<string, object> request, Session session, bool forPrelude)
        {
            Outcome outcome = new Outcome();
            PwshlibPSHost psHost = session.Host;
            Runspace runspace = session.Runspace;
            PowerShell ps = null;
            // Taken whatever happens: a standby left parked would keep the
            // runspace busy for its reset.
            Standby standby = session.TakeStandby();
            try
            {
                int timeoutMs = (int)Math.Min(Convert.ToDouble(Get(request, "timeout_ms"), CultureInfo.InvariantCulture), int.MaxValue);
                string workingDir = Text(Get(request, "working_dir"));
                // Relative to the process's current directory, which is the
                // home directory between calls, as is the runspace location.
                if (workingDir.Length > 0 && !Directory.Exists(workingDir))
                {
                    outcome.Result = NewResult(1, null, null, null, "Working directory '" + workingDir + "' does not exist");
                    return outcome;
                }
                outcome.Ran = session;
                outcome.RequestEnvironment = new List<string>();
                SetRequestEnvironment(Get(request, "env"), outcome.RequestEnvironment);
                string code = Text(Get(request, "code"));
                object dsc = Get(request, "dsc");
                DirectCall direct = null;
                // The request's first steps in the runspace (its variables
                // through state): on this thread, or on a standby
                // pipeline's, which then makes the call when they return it.
                Func<RunspaceGlobals, Hashtable> firstSteps = delegate(RunspaceGlobals state)
                {
                    psHost.Reset();
                    SecretValues.Bind(state, Get(request, "secrets"));
                    if (dsc == null) { return null; }
                    if (!forPrelude) { throw new FormatException("protocol error: a DSC call as data needs a prelude"); }
                    DscRequest call = DscCall.Read(state, dsc);
                    direct = DirectDsc.Prepare(state, call, standby == null);
                    if (standby != null) { standby.Call = direct; }
                    if (direct == null)
                    {
                        code = DscCall.Bind(state, call);
                        return null;
                    }
                    // Only a standby's pipeline makes the call from this
                    // (its preferences set there); a new pipeline gets it
                    // from DirectDsc.AddTo, which sets them itself.
                    return standby != null ? DirectDsc.ForStandby(direct, state) : null;
                };
                IAsyncResult running = null;
                PSDataCollection<PSObject> output = null;
                bool finished = false;
                bool early = false;
                ErrorSink errorSink = null;
                if (standby != null && (dsc == null || workingDir.Length > 0))
                {
                    ReleaseStandby(standby);
                    standby = null;
                }
                if (standby != null)
                {
                    ps = standby.Shell;
                    running = standby.Running;
                    output = standby.Output;
                    errorSink = new ErrorSink(ps.Streams.Error, new SharedText(), null, null);
                    Trace("standby given");
                    standby.Give(firstSteps);
                    int signalled = WaitHandle.WaitAny(new WaitHandle[] { running.AsyncWaitHandle, standby.CallDone }, timeoutMs);
                    Trace("call returned");
                    finished = signalled != WaitHandle.WaitTimeout;
                    // The call returned and the pipeline is still ending:
                    // its end is the reset's to wait for (PutBack).
                    early = signalled == 1 && standby.Called;
                    if (finished && !standby.Called)
                    {
                        // No direct call: the standby ended without one.
                        try { ps.EndInvoke(running); } catch (Exception) { }
                        ps.Dispose();
                        ps = null;
                        if (standby.Failure != null) { throw standby.Failure; }
                    }
                    else
                    {
                        outcome.Direct = true;
                    }
                }
                else
                {
                    if (workingDir.Length > 0)
                    {
                        // SetLocation takes a wildcard path: '[' and ']' (and
                        // '*', '?', '`') are escaped so that a directory named
                        // 'a[1]' is that directory.
                        runspace.SessionStateProxy.Path.SetLocation(WildcardPattern.Escape(workingDir));
                        Environment.CurrentDirectory = workingDir;
                    }
                    firstSteps(new RunspaceGlobals(runspace));
                }
                if (ps == null)
                {
                    ps = PowerShell.Create();
                    ps.Runspace = runspace;
                    if (direct != null)
                    {
                        DirectDsc.AddTo(direct, ps, runspace);
                        outcome.Direct = true;
                    }
                    else { ps.AddScript(code); }
                    if (!forPrelude)
                    {
                        // The code's output is piped into Out-String -Stream
                        // (OutTextCommand, which passes the plainest lines
                        // by itself), never left last in the pipeline: a
                        // native program there would inherit the host
                        // process's stdout (the null device) instead of
                        // being read (what NativeCommandProcessor does for
                        // the last command of a pipeline that ends in
                        // Out-Default). Out-String renders $PSStyle's ANSI
                        // escapes out of tables and lists (pwsh 7.2+,
                        // OutputRendering 'Host': no escapes outside a
                        // host). Its lines reach the host through
                        // PipelineSink.
                        ps.AddCommand(OutTextCommand.Info);
                    }
                    PSDataCollection<PSObject> noInput = new PSDataCollection<PSObject>();
                    noInput.Complete();
                    output = new PSDataCollection<PSObject>();
                    if (!forPrelude) { new PipelineSink(output, psHost); }
                    errorSink = forPrelude
                        ? new ErrorSink(ps.Streams.Error, new SharedText(), null, null)
                        : new ErrorSink(ps.Streams.Error, psHost.Output, runspace, errorRenderer);
                    Trace("pipeline starting");
                    running = ps.BeginInvoke<PSObject, PSObject>(noInput, output);
                    finished = running.AsyncWaitHandle.WaitOne(timeoutMs);
                    Trace("pipeline ended");
                }

                if (!finished)
                {
                    // Stop() waits until the pipeline notices, which code
                    // blocked in a native or .NET call never does: ask now,
                    // and wait (a bounded time, giving up on the runspace
                    // when it does not stop) only after the result is sent
                    // (AfterReply), so that the result reaches the manager
                    // well inside its grace even on a loaded machine.
                    outcome.Stopping = ps.BeginStop(null, null);
                    outcome.Pipeline = ps;
                    ps = null;
                    outcome.Rebuild = true;
                    // What the code wrote before the timeout, so that a user
                    // can see where it hung (as pwshlib 2.x).
                    string written = psHost.TakeOutput();
                    outcome.Result = NewResult(1, forPrelude ? null : NonEmpty(written), forPrelude ? NonEmpty(written) : null, StderrItems(errorSink, psHost),
                        "Catastrophic failure: PowerShell module timeout (" + timeoutMs.ToString(CultureInfo.InvariantCulture) + " ms) exceeded while executing");
                    return outcome;
                }

                string errorMessage = null;
                int exitCode = 0;
                if (early)
                {
                    outcome.Ending = ps;
                    outcome.EndingRun = running;
                    ps = null;
                    direct.Settle = delegate { EndPipeline(outcome); };
                }
                else
                {
                    try
                    {
                        ps.EndInvoke(running);
                    }
                    catch (Exception problem)
                    {
                        if (direct != null)
                        {
                            // The resource failed: the call's outcome says so,
                            // as the prelude's catch does, and the runspace
                            // stays.
                            direct.Failure = problem;
                        }
                        else
                        {
                            errorMessage = FailureText(problem);
                            exitCode = 1;
                            outcome.Rebuild = true;
                        }
                    }
                }

                if (runspace.RunspaceStateInfo.State != RunspaceState.Opened)
                {
                    outcome.Rebuild = true;
                }
                if (psHost.ShouldExit)
                {
                    // `exit N` at the top level (SetShouldExit).
                    exitCode = psHost.ExitCode;
                }
                else if (exitCode == 0)
                {
                    // A native program's exit code, when the code ended after
                    // one.
                    int lastExitCode;
                    if (TryInt(early ? direct.LastExitCode : runspace.SessionStateProxy.GetVariable("LASTEXITCODE"), out lastExitCode))
                    {
                        exitCode = lastExitCode;
                    }
                }

                string hostText = psHost.TakeOutput();
                string stdout;
                string native = null;
                if (direct != null)
                {
                    stdout = OutLines(DirectDsc.Finish(direct, runspace, output), null);
                    native = hostText;
                }
                else if (forPrelude)
                {
                    // The DSC prelude leaves its lines in a variable rather
                    // than the pipeline, which transcription records.
                    object kept = runspace.SessionStateProxy.GetVariable(DscOutputVariable);
                    PSObject wrapped = kept as PSObject;
                    string[] held = (wrapped != null ? wrapped.BaseObject : kept) as string[];
                    if (held != null)
                    {
                        runspace.SessionStateProxy.SetVariable(DscOutputVariable, null);
                        stdout = OutLines(held, output.Count > 0 ? OutString(runspace, output) : null);
                    }
                    else
                    {
                        stdout = output.Count > 0 ? OutString(runspace, output) : null;
                    }
                    native = hostText;
                }
                else
                {
                    stdout = hostText;
                }
                outcome.Result = NewResult(exitCode, NonEmpty(stdout), NonEmpty(native), StderrItems(errorSink, psHost), errorMessage);
                return outcome;
            }
            catch (Exception problem)
            {
                outcome.Result = NewResult(1, null, null, null, problem.Message);
                return outcome;
            }
            finally
            {
                if (ps != null) { ps.Dispose(); }
                if (standby != null && !standby.Given) { ReleaseStandby(standby); }
            }
        }

        // Waits for the end of a pipeline whose call returned before it
        // ended (Standby.Done), and disposes of it. Marks the session for a
        // rebuild when it does not end within the stop wait.
        private void EndPipeline(Outcome outcome)
        {
            PowerShell ending = outcome.Ending;
            if (ending == null) { return; }
            outcome.Ending = null;
            if (!outcome.EndingRun.AsyncWaitHandle.WaitOne(StopWaitMs))
            {
                outcome.Rebuild = true;
                return;
            }
            try { ending.EndInvoke(outcome.EndingRun); } catch (Exception) { }
            ending.Dispose();
        }

        // A standby the request does not use ends before anything else runs
        // in its runspace; one that does not end takes its session with it.
        private static void ReleaseStandby(Standby standby)
        {
            if (!standby.Release(Session.StandbyReleaseMs)) { throw new InvalidOperationException("the runspace's standby pipeline did not end"); }
        }

        // The global variable where the DSC prelude's
        // Invoke-PwshlibDscResource leaves its lines of JSON (string[]) in
        // this host: not in the pipeline, whose output transcription
        // records, and a Get's result may hold what the system keeps secret.
        private const string DscOutputVariable = "PwshlibDscOutput";

        // The prelude's lines after whatever else the code wrote to the
        // pipeline, each ended as Out-String ends a string.
        private static string OutLines(string[] lines, string before)
        {
            StringBuilder text = new StringBuilder(before ?? string.Empty);
            foreach (string line in lines) { text.Append(line).Append(Environment.NewLine); }
            return text.ToString();
        }

        // $LASTEXITCODE -as [int]: null, or a value that does not convert,
        // is no exit code.
        private static bool TryInt(object value, out int result)
        {
            result = 0;
            if (value == null) { return false; }
            try
            {
                result = (int)LanguagePrimitives.ConvertTo(value, typeof(int), CultureInfo.InvariantCulture);
                return true;
            }
            catch (Exception)
            {
                return false;
            }
        }

        // The pipeline output as Out-String renders it (what a request with a
        // prelude answers: the one line of JSON). A string renders as itself
        // and a line end (the platform's), which is all the DSC prelude
        // writes; anything else goes through Out-String in the session.
        private static string OutString(Runspace runspace, PSDataCollection<PSObject> output)
        {
            StringBuilder text = new StringBuilder();
            bool allStrings = true;
            foreach (PSObject item in output)
            {
                string line = item == null ? null : item.BaseObject as string;
                if (line == null) { allStrings = false; break; }
                text.Append(line).Append(Environment.NewLine);
            }
            if (allStrings) { return text.ToString(); }
            PowerShell formatter = PowerShell.Create();
            try
            {
                formatter.Runspace = runspace;
                formatter.AddCommand("Microsoft.PowerShell.Utility\\Out-String");
                StringBuilder rendered = new StringBuilder();
                foreach (PSObject piece in formatter.Invoke(output))
                {
                    if (piece != null) { rendered.Append(piece.BaseObject as string); }
                }
                return rendered.ToString();
            }
            finally
            {
                formatter.Dispose();
            }
        }

        private static string NonEmpty(string text)
        {
            return string.IsNullOrEmpty(text) ? null : text;
        }

        // The result's stderr elements: the error records (a native
        // program's lines in a row as one), then [Console]::Error and the
        // host UI's WriteErrorLine, one element per line.
        private static string[] StderrItems(ErrorSink sink, PwshlibPSHost psHost)
        {
            List<string> items = new List<string>(sink.Take());
            string rest = psHost.TakeErrors();
            int start = 0;
            while (start < rest.Length)
            {
                int end = rest.IndexOf('\n', start);
                if (end < 0) { end = rest.Length - 1; }
                items.Add(rest.Substring(start, end - start + 1));
                start = end + 1;
            }
            return items.ToArray();
        }

        // stderr_items: the elements of the manager's stderr Array, each with
        // its line end; stderr: their text joined, for a manager that does
        // not read stderr_items.
        private static List<KeyValuePair<string, object>> NewResult(int exitCode, string stdout, string nativeStdout, string[] stderrItems, string errorMessage)
        {
            if (stderrItems == null) { stderrItems = new string[0]; }
            List<KeyValuePair<string, object>> result = new List<KeyValuePair<string, object>>();
            result.Add(Field("type", "result"));
            result.Add(Field("exitcode", exitCode));
            result.Add(Field("stdout", stdout));
            result.Add(Field("stderr", string.Concat(stderrItems)));
            result.Add(Field("stderr_items", stderrItems));
            result.Add(Field("errormessage", errorMessage));
            result.Add(Field("native_stdout", nativeStdout));
            return result;
        }

        // The text of a terminating error, with where it happened when
        // PowerShell knows ("At line:1 char:...", as pwshlib 2.x gave it): the
        // innermost exception's message, and the position of the innermost
        // error record in the chain that has one. A position in host.ps1 is
        // never the user's; a ParseException's message already says where,
        // for each error.
        private string FailureText(Exception exception)
        {
            string position = null;
            Exception failure = exception;
            while (true)
            {
                IContainsErrorRecord holder = failure as IContainsErrorRecord;
                if (holder != null && holder.ErrorRecord != null)
                {
                    InvocationInfo invocation = holder.ErrorRecord.InvocationInfo;
                    if (invocation != null && !string.IsNullOrEmpty(invocation.PositionMessage) && invocation.ScriptName != hostScriptPath)
                    {
                        position = invocation.PositionMessage;
                    }
                }
                if (failure.InnerException == null) { break; }
                failure = failure.InnerException;
            }
            if (position != null && !(failure is ParseException))
            {
                return failure.Message + "\n" + position;
            }
            return failure.Message;
        }
    }

    // The plain request's output as Out-String -Stream renders it. Out-String
    // starts a formatting pipeline of its own for every call (some 0.3 ms of
    // a round trip of `1`, pwsh 7.6.9), yet renders a string, a
    // non-negative integer or a boolean as its own text whatever views are
    // loaded (the formatter takes those types out of band, before any view:
    // an Update-FormatData view for System.Int32 or System.String does not
    // apply; FormatViewManager, DefaultScalarTypes, in Windows PowerShell
    // 5.1 and pwsh 7 alike), one line each (TextWriterLineOutput.WriteLine,
    // no wrapping). So until the first other object, such objects are
    // written here as that text, and Out-String -Stream (module-qualified:
    // a user's own function Out-String, which ResetRunspaceState keeps, is
    // not called) starts with that first other object and takes every
    // object after it, so that tables and lists group as before. Passed
    // by hand only: a string of one line, with no control character (no
    // line end, no ANSI escape, nothing OutputRendering may strip); an
    // object whose first type name is its own type's (no type name a view
    // could select). A null before anything else renders as nothing, as
    // in Out-String.
    [Cmdlet("Out", "PwshlibText")]
    public sealed class OutTextCommand : PSCmdlet, IDisposable
    {
        // One for every call: a CmdletInfo keeps its CommandMetadata (the
        // parameters, read by reflection), but one built without an
        // ExecutionContext never finds it in PowerShell's own cache
        // (CommandMetadata.Get), and a new one per call cost some 0.2 ms
        // (pwsh 7.6.9). Only the plain runspace's pipelines use it, one at
        // a time.
        internal static readonly CmdletInfo Info = new CmdletInfo("Out-PwshlibText", typeof(OutTextCommand));

        private SteppablePipeline formatter;

        [Parameter(ValueFromPipeline = true)]
        public PSObject InputObject { get; set; }

        protected override void ProcessRecord()
        {
            if (formatter == null)
            {
                if (InputObject == null) { return; }
                string line = PlainText(InputObject);
                if (line != null)
                {
                    WriteObject(line);
                    return;
                }
                formatter = ScriptBlock.Create("Microsoft.PowerShell.Utility\\Out-String -Stream").GetSteppablePipeline();
                formatter.Begin(this);
            }
            formatter.Process(InputObject);
        }

        protected override void EndProcessing()
        {
            if (formatter != null) { formatter.End(); }
        }

        public void Dispose()
        {
            // SteppablePipeline is IDisposable on pwsh 7, not on 5.1.
            IDisposable disposable = (object)formatter as IDisposable;
            if (disposable != null) { disposable.Dispose(); }
            formatter = null;
        }

        // The object's text when Out-String -Stream renders it as that text,
        // one line; else null.
        internal static string PlainText(PSObject item)
        {
            object value = item.BaseObject;
            if (value == null) { return null; }
            string text = null;
            if (value is string) { text = (string)value; }
            else if (value is int && (int)value >= 0) { text = ((int)value).ToString(CultureInfo.InvariantCulture); }
            else if (value is long && (long)value >= 0) { text = ((long)value).ToString(CultureInfo.InvariantCulture); }
            else if (value is bool) { text = (bool)value ? "True" : "False"; }
            else { return null; }
            Collection<string> names = item.TypeNames;
            if (names.Count == 0 || !string.Equals(names[0], value.GetType().FullName, StringComparison.Ordinal)) { return null; }
            foreach (char c in text)
            {
                if (c < ' ' || (c >= '\u007f' && c <= '\u009f')) { return null; }
            }
            return text;
        }
    }
}
