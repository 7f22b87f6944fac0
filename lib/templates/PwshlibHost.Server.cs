// The host's C#, part 9 of 11 (PwshlibHost.cs lists the parts): sessions,
// and the host loop's connection and frames (Server).
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

    public sealed class ProtocolException : Exception
    {
        public ProtocolException(string message) : base(message) { }
    }

    // A runspace with a host of its own. Built from
    // InitialSessionState.CreateDefault2(): on Windows PowerShell 5.1,
    // RunspaceFactory.CreateRunspace() without a session state builds the
    // runspace from the legacy RunspaceConfiguration, its
    // InitialSessionState is null, and ResetRunspaceState() throws on every
    // call. CreateDefault2 loads the core engine commands; other modules
    // load on first use.
    public sealed class Session
    {
        private readonly PwshlibPSHost psHost;
        private readonly Runspace runspace;

        public Session()
        {
            psHost = new PwshlibPSHost();
            InitialSessionState state = InitialSessionState.CreateDefault2();
            runspace = RunspaceFactory.CreateRunspace(psHost, state);
            runspace.Open();
            TrustRootDrive(runspace);
            ConsoleRouter.Register(runspace.InstanceId, psHost.Output, psHost.Errors);
        }

        // PSDriveInfo.IsAutoMounted: internal to PowerShell, read once.
        private static readonly PropertyInfo autoMounted = typeof(PSDriveInfo).GetProperty("IsAutoMounted", BindingFlags.Instance | BindingFlags.NonPublic);

        // On Linux and macOS, the file system drive named '/' is marked
        // auto-mounted whenever the first mount .NET lists (DriveInfo.
        // GetDrives(), /proc/self/mountinfo's order) is not a fixed disk:
        // /proc on this project's machines. FileSystemProvider.
        // InitializeDefaultDrives names every mount's drive '/', roots it at
        // '/', keeps the first and takes its type (PowerShell PR #2679).
        // Every lookup of an auto-mounted drive then checks that it still
        // exists (SessionStateInternal.GetDrive, ValidateOrRemoveAutoMounted-
        // Drive), and .NET answers by reading the whole mount table: two or
        // three times a location set, 0.2 ms of each 0.5 ms
        // ResetRunspaceState, and in every path a call resolves.
        // For '/' the check looks up the root mount, which a running
        // process cannot lose: it fails only when the read itself fails,
        // and then PowerShell removes the root drive under a running host.
        // So it is skipped for '/' alone. On Unix the flag does nothing
        // else to a drive already made (pwsh 7's source: it also picks the
        // scope's table a drive is added to, done by now, and is read by
        // Windows-only lookups). Windows has no drive named '/'; a
        // PowerShell without the property is left as it is.
        private static void TrustRootDrive(Runspace runspace)
        {
            if (autoMounted == null) { return; }
            try
            {
                foreach (PSDriveInfo drive in runspace.SessionStateProxy.Drive.GetAllForProvider("FileSystem"))
                {
                    if (drive.Name == "/" && drive.Root == "/" && (bool)autoMounted.GetValue(drive, null))
                    {
                        autoMounted.SetValue(drive, false, null);
                    }
                }
            }
            catch (Exception)
            {
            }
        }

        public PwshlibPSHost Host { get { return psHost; } }
        public Runspace Runspace { get { return runspace; } }

        // The pipeline waiting for this session's next direct call (after
        // one), or null.
        internal Standby Standby;

        // The standby, which the caller now owns.
        internal Standby TakeStandby()
        {
            Standby standby = Standby;
            Standby = null;
            return standby;
        }

        // Ends the session. A runspace whose pipeline did not stop in time
        // is left alone: disposing it would wait for that pipeline; it goes
        // with the process.
        // A standby ends as soon as it is released; this is a bound for a
        // machine under load.
        internal const int StandbyReleaseMs = 5000;

        public void Remove(bool abandon)
        {
            ConsoleRouter.Unregister(runspace.InstanceId);
            if (abandon) { return; }
            Standby standby = TakeStandby();
            if (standby != null && !standby.Release(StandbyReleaseMs)) { return; }
            try { runspace.Dispose(); } catch (Exception) { }
        }
    }

    // A place requests run in (one for plain requests, two used in turn
    // for requests with a prelude): the session (null until built, or after it went), which
    // prelude text is defined in it, and whether its reset after the last
    // call in it is finished (Ready; the loop waits on it before the
    // session runs anything, is replaced or closed).
    internal sealed class Slot
    {
        public Session Session;
        // The Server's preludeGeneration whose text is defined in Session;
        // -1: none.
        public int PreludeGeneration = -1;
        public readonly ManualResetEvent Ready = new ManualResetEvent(true);
        // Its resets' thread, started with the first (Server.ResetInBackground).
        public Resetter Resetter;
        // Set by the worker when the reset failed: the session is not used
        // again.
        public volatile bool Broken;
    }

    // What a request left to do once its result is sent.
    internal sealed class Outcome
    {
        public List<KeyValuePair<string, object>> Result;
        // The session the code ran in (null when it did not run).
        public Session Ran;
        // The slot that holds that session.
        public Slot Slot;
        public bool ForPrelude;
        // The names the request's env set: put back after the call even
        // when the call's own changes are kept (Server.KeepEnvironment).
        public List<string> RequestEnvironment;
        // The call was made directly (DirectDsc): the slot's next request
        // is likely one too, and gets a standby pipeline.
        public bool Direct;
        // A standby's pipeline whose call returned before it ended: ended
        // before the session runs anything again (Server.EndPipeline).
        public PowerShell Ending;
        public IAsyncResult EndingRun;
        // The session must go (the call failed, timed out, or left the
        // runspace in another state than Opened).
        public bool Rebuild;
        // Its session's reset was started (PutBack):
        // from then on the reset's worker owns this outcome.
        public bool Resetting;
        // A timed-out call: its stop request and pipeline.
        public IAsyncResult Stopping;
        public PowerShell Pipeline;
    }

    // The host loop (docs/protocol.md): reads execute requests one at a
    // time, runs each, answers, and only then does what the next request
    // needs but the answer does not (the runspace reset, the environment
    // and location restore, a rebuild after a failure or a timeout), before
    // it reads that next request: the manager is answered as soon as the
    // code is done, and the next request can never run before the cleanup
    // of the one before it is finished (one thread does both, in order).
    // Compiled C#, not PowerShell functions: per request the host runs no
    // interpreted PowerShell of its own, only the request's code.
    public sealed partial class Server
    {
        private const int ProtocolVersion = 1;
        // The prelude mechanism this host offers in its hello.
        private const int PreludeVersion = 1;
        // The secret binding this host offers in its hello (a request's
        // "secrets", bound by SecretValues before the code runs).
        private const int SecretsVersion = 1;
        // The DSC call as data this host offers in its hello (a request's
        // "dsc", made by DscCall).
        private const int DscVersion = 2;
        private const int MaxFrameLength = 268435456;
        // How host.ps1 got this assembly, told in the hello: "compiled"
        // at this start, or "cached" (loaded from its assembly cache);
        // Start sets it.
        public static string AssemblySource = "compiled";
        // How long a timed-out call's Stop() may take before the host gives
        // up on that runspace (PowerShell.Stop waits for the pipeline to
        // notice, which a native call or a .NET method never does). The wait
        // comes after the timeout result is sent, but before the next
        // request is read: kept well under the manager's 1 s grace, so that
        // a next request sent at once still has its own time.
        public const int StopWaitMs = 500;

        // Reading: strict UTF-8, invalid bytes throw instead of becoming
        // U+FFFD. Writing: replacing (Json.WriteString already replaced lone
        // surrogates; nothing a call writes can end the host).
        private static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);
        private static readonly UTF8Encoding ReplacingUtf8 = new UTF8Encoding(false, false);

        private Stream stream;
        private readonly string hostScriptPath;
        private readonly string homeDirectory;
        private readonly bool homeHasWildcards;
        private readonly StringComparer nameComparer;
        private readonly Dictionary<string, string> environmentSnapshot;

        // Two slots for requests with a prelude (the DSC calls of an agent
        // run, see docs/protocol.md, "Preludes"), used in turn: while a call
        // runs in one, the other's reset after the call before runs on a
        // worker thread, off the critical path even when the manager sends
        // each request the moment the previous reply arrives. Each slot's
        // session has the prelude defined in it, and whatever a call loads
        // per runspace (the DSC path's module cache) is loaded in each.
        // Plain requests keep one slot: a function or module a plain call
        // defines stays for the next plain call (ResetRunspaceState keeps
        // the function table; callers of Pwsh::Manager#execute may rely on
        // it), which a turn in another runspace would break. Their reset
        // still runs on the worker, overlapping the read of the next request.
        private readonly Slot[] plainSlots = new Slot[] { new Slot() };
        private readonly Slot[] preludeSlots = new Slot[] { new Slot(), new Slot() };
        private int plainNext;
        private int preludeNext;
        // The prelude this host session holds: its id and text, defined
        // lazily in each prelude slot's session (generation: which text a
        // session holds; a new text gives the slots new sessions).
        private string preludeId;
        private string preludeCode;
        private int preludeGeneration;
        // $HOME as a fresh runspace has it (ResetRunspaceState reads it from
        // the process environment, which a call in the other slot may have
        // changed while the reset runs; see Clean).
        private string homeVariable;
        // A timed-out pipeline was left running: it may still change the
        // environment, which is then restored before the next call too.
        private bool abandonedPipeline;
        // Shows error records under a $ErrorView the code chose.
        private readonly ErrorRenderer errorRenderer;
        // homeDirectory: where every call starts when its request names no
        // working directory (the ProviderPath of the directory the host
        // started in).
        public Server(string hostScriptPath, string homeDirectory, bool onWindows)
        {
            this.hostScriptPath = hostScriptPath;
            this.homeDirectory = homeDirectory;
            homeHasWildcards = WildcardPattern.ContainsWildcardCharacters(homeDirectory);
            // Environment names compare as the platform compares them.
            nameComparer = onWindows ? StringComparer.OrdinalIgnoreCase : StringComparer.Ordinal;
            environmentSnapshot = new Dictionary<string, string>(nameComparer);
            foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables())
            {
                environmentSnapshot[(string)entry.Key] = (string)entry.Value;
            }
            Trace("server: constructing");
            plainSlots[0].Session = new Session();
            Trace("server: plain runspace open");
            errorRenderer = new ErrorRenderer(plainSlots[0].Session.Runspace);
            homeVariable = Convert.ToString(plainSlots[0].Session.Runspace.SessionStateProxy.GetVariable("HOME"), CultureInfo.InvariantCulture);
        }

        // Greets the manager on the connection's stream, then serves until
        // exit, end of stream or a malformed frame. A broken connection
        // throws (nothing is left to tell the manager).
        public void Serve(Stream connection, string hostName, int processId)
        {
            stream = connection;
            List<KeyValuePair<string, object>> hello = new List<KeyValuePair<string, object>>();
            hello.Add(Field("type", "hello"));
            hello.Add(Field("protocol", ProtocolVersion));
            hello.Add(Field("pid", processId));
            hello.Add(Field("host", hostName));
            hello.Add(Field("prelude", PreludeVersion));
            hello.Add(Field("secrets", SecretsVersion));
            hello.Add(Field("assembly", AssemblySource));
            hello.Add(Field("dsc", DscVersion));
            WriteFrame(hello);
            Trace("hello sent");
            FlushTrace();
            try
            {
                ServeRequests();
            }
            finally
            {
                FlushTrace();
            }
        }

        // The loop: one request at a time, until exit, end of stream or a
        // malformed frame.
        private void ServeRequests()
        {
            while (true)
            {
                Dictionary<string, object> message;
                try
                {
                    message = ReadFrame();
                }
                catch (ProtocolException problem)
                {
                    WriteFrame(ErrorMessage(problem.Message));
                    return;
                }
                if (message == null) { return; }
                string type = Text(Get(message, "type"));
                if (type == "exit") { return; }
                if (type != "execute")
                {
                    WriteFrame(ErrorMessage("protocol error: unknown message type '" + type + "'"));
                    return;
                }
                if (Get(message, "code") == null || Get(message, "timeout_ms") == null)
                {
                    WriteFrame(ErrorMessage("protocol error: execute needs code and timeout_ms"));
                    return;
                }
                Trace("request read");
                Outcome outcome = InvokeRequest(message);
                // Echo the request's id, so the manager never takes this
                // reply for another request's.
                outcome.Result.Add(Field("id", Get(message, "id")));
                BeforeReply(outcome);
                WriteFrame(outcome.Result);
                Trace("reply written");
                AfterReply(outcome);
            }
        }

        // Ends every session (the host is leaving), each once its reset is
        // done; one whose reset does not finish within the stop wait is left
        // to go with the process.
        public void Close()
        {
            if (listener != null)
            {
                listener.Close();
                try { File.Delete(listenerPath); } catch (Exception) { }
            }
            foreach (Slot slot in new Slot[] { plainSlots[0], preludeSlots[0], preludeSlots[1] })
            {
                bool done = slot.Ready.WaitOne(StopWaitMs);
                Drop(slot, !done);
            }
        }

        // The slot's session goes (abandoned: not disposed, see
        // Session.Remove). Only when its reset is not running.
        private static void Drop(Slot slot, bool abandon)
        {
            if (slot.Session != null) { slot.Session.Remove(abandon); }
            slot.Session = null;
            slot.PreludeGeneration = -1;
            slot.Broken = false;
        }

        private static KeyValuePair<string, object> Field(string name, object value)
        {
            return new KeyValuePair<string, object>(name, value);
        }

        private static List<KeyValuePair<string, object>> ErrorMessage(string text)
        {
            List<KeyValuePair<string, object>> message = new List<KeyValuePair<string, object>>();
            message.Add(Field("type", "error"));
            message.Add(Field("message", text));
            return message;
        }

        private static object Get(Dictionary<string, object> message, string name)
        {
            object value;
            if (message == null || !message.TryGetValue(name, out value)) { return null; }
            return value;
        }

        // A field as text, as PowerShell's [string] cast gave it: null is "".
        private static string Text(object value)
        {
            if (value == null) { return string.Empty; }
            if (value is bool) { return (bool)value ? "True" : "False"; }
            return Convert.ToString(value, CultureInfo.InvariantCulture);
        }

        // Reads exactly count bytes. Returns null if the stream ends before
        // the first byte (only allowed between frames); throws if it ends in
        // the middle. A large frame is read in chunks, so that a length that
        // lies costs no more memory than the bytes that came.
        private byte[] ReadExactly(int count, bool eofAllowed)
        {
            if (count <= 65536)
            {
                byte[] whole = new byte[count];
                int got = 0;
                while (got < count)
                {
                    int read = stream.Read(whole, got, count - got);
                    if (read <= 0)
                    {
                        if (eofAllowed && got == 0) { return null; }
                        throw EndedInside(got, count);
                    }
                    got += read;
                }
                return whole;
            }
            MemoryStream buffer = new MemoryStream();
            byte[] chunk = new byte[65536];
            while (buffer.Length < count)
            {
                int wanted = (int)Math.Min(chunk.Length, count - buffer.Length);
                int read = stream.Read(chunk, 0, wanted);
                if (read <= 0) { throw EndedInside(buffer.Length, count); }
                buffer.Write(chunk, 0, read);
            }
            return buffer.ToArray();
        }

        private static ProtocolException EndedInside(long got, int count)
        {
            return new ProtocolException("protocol error: stream ended inside a frame (" + got.ToString(CultureInfo.InvariantCulture) + " of " + count.ToString(CultureInfo.InvariantCulture) + " bytes)");
        }

        // One frame: a 4-byte big-endian length, then that many bytes of
        // UTF-8 JSON. Null means a clean end of stream.
        private Dictionary<string, object> ReadFrame()
        {
            byte[] prefix = ReadExactly(4, true);
            if (prefix == null) { return null; }
            Trace("request arrived");
            long length = ((long)prefix[0] << 24) | ((long)prefix[1] << 16) | ((long)prefix[2] << 8) | prefix[3];
            if (length > MaxFrameLength)
            {
                throw new ProtocolException("protocol error: frame length " + length.ToString(CultureInfo.InvariantCulture) + " exceeds the maximum of " + MaxFrameLength.ToString(CultureInfo.InvariantCulture));
            }
            byte[] payload = ReadExactly((int)length, false);
            string text;
            try
            {
                text = StrictUtf8.GetString(payload);
            }
            catch (DecoderFallbackException)
            {
                throw new ProtocolException("protocol error: payload is not valid UTF-8");
            }
            object parsed;
            try
            {
                parsed = Json.Parse(text);
            }
            catch (FormatException problem)
            {
                throw new ProtocolException("protocol error: payload is not valid JSON: " + problem.Message);
            }
            Dictionary<string, object> message = parsed as Dictionary<string, object>;
            if (message == null || Get(message, "type") == null)
            {
                throw new ProtocolException("protocol error: payload is not a message object with a type");
            }
            return message;
        }

        // The length prefix and the payload in one write: one send, not two.
        private void WriteFrame(List<KeyValuePair<string, object>> message)
        {
            string text = Json.Write(message);
            int length = ReplacingUtf8.GetByteCount(text);
            byte[] frame = new byte[length + 4];
            frame[0] = (byte)(length >> 24);
            frame[1] = (byte)(length >> 16);
            frame[2] = (byte)(length >> 8);
            frame[3] = (byte)length;
            ReplacingUtf8.GetBytes(text, 0, text.Length, frame, 4);
            stream.Write(frame, 0, frame.Length);
            stream.Flush();
        }
    }
}
