// The host's C#, part 8 of 11 (PwshlibHost.cs lists the parts): the host's
// start (Server.Start, after host.ps1 has loaded this assembly), the Unix
// socket it listens on, the peer check, the parent watcher and the opt-in
// timing trace.
namespace PwshlibHost
{
    using System;
    using System.Diagnostics;
    using System.Globalization;
    using System.IO;
    using System.Management.Automation;
    using System.Net;
    using System.Net.Sockets;
    using System.Text;
    using System.Threading;

    // Who connected to the host's endpoint: the manager alone may.
    // The pipe's ACL admits every process of the agent's
    // user, so when Puppet runs elevated but not as SYSTEM a
    // medium-integrity process of that user could connect first and run
    // code elevated. host.ps1 knows the manager's pid (-ParentPid, the
    // Ruby process that started it and connects to it) and refuses any
    // other client: it hangs up and waits on, and the manager, which
    // retries while the one pipe instance is busy, connects next.
    // * A named pipe: GetNamedPipeClientProcessId (kernel32, Vista and
    //   later) on the server's handle gives the pid of the process that
    //   opened the client end. .NET's NamedPipeServerStream has no managed
    //   form of it (its GetImpersonationUserName is the user, not the
    //   process), so it is called on SafePipeHandle, which derives from
    //   SafeHandle: the marshaller keeps the handle alive for the call. A
    //   failure to identify the client refuses it.
    // * A Unix socket (Linux): getsockopt SO_PEERCRED (SOL_SOCKET 1,
    //   SO_PEERCRED 17) gives struct ucred { pid_t pid; uid_t uid; gid_t
    //   gid; }, the pid being the process that called connect(), recorded
    //   by the kernel then. .NET 5+'s Socket.GetRawSocketOption does the
    //   same but does not exist for Windows PowerShell 5.1's compiler, so
    //   libc's getsockopt is declared (never called on Windows). Elsewhere
    //   the socket's 0700 directory admits this user alone, as before.
    public static class PeerCheck
    {
        [System.Runtime.InteropServices.DllImport("kernel32.dll", SetLastError = true)]
        [return: System.Runtime.InteropServices.MarshalAs(System.Runtime.InteropServices.UnmanagedType.Bool)]
        private static extern bool GetNamedPipeClientProcessId(System.Runtime.InteropServices.SafeHandle pipe, out uint clientProcessId);

        [System.Runtime.InteropServices.DllImport("libc", SetLastError = true)]
        private static extern int getsockopt(IntPtr socket, int level, int optionName, byte[] optionValue, ref uint optionLength);

        private const int SolSocket = 1;
        private const int SoPeerCred = 17;

        // null when the connected pipe's client is the manager; else why it
        // is refused.
        public static string PipeClientRefusal(System.Runtime.InteropServices.SafeHandle pipe, int managerPid)
        {
            uint client;
            if (!GetNamedPipeClientProcessId(pipe, out client))
            {
                return "the client could not be identified (error " + System.Runtime.InteropServices.Marshal.GetLastWin32Error().ToString(CultureInfo.InvariantCulture) + ")";
            }
            return Refusal((long)client, managerPid);
        }

        // null when the accepted socket's peer is the manager; else why not.
        public static string SocketPeerRefusal(IntPtr socket, int managerPid)
        {
            byte[] credentials = new byte[12];
            uint length = (uint)credentials.Length;
            if (getsockopt(socket, SolSocket, SoPeerCred, credentials, ref length) != 0 || length < 4)
            {
                return "the client could not be identified (errno " + System.Runtime.InteropServices.Marshal.GetLastWin32Error().ToString(CultureInfo.InvariantCulture) + ")";
            }
            return Refusal((long)BitConverter.ToInt32(credentials, 0), managerPid);
        }

        private static string Refusal(long client, int managerPid)
        {
            if (client == managerPid) { return null; }
            return "pid " + client.ToString(CultureInfo.InvariantCulture) + " is not the manager (pid " + managerPid.ToString(CultureInfo.InvariantCulture) + ")";
        }
    }

    // What host.ps1 starts the server through: an instance the script gets
    // from the loaded assembly by name (Assembly.CreateInstance), so that
    // host.ps1 calls a method by its constant name. PowerShell's
    // suspicious-content check (ScriptBlock.CheckSuspiciousContent) flags
    // a static call on a type held in a variable ($Type::Start) and a
    // [type] conversion, and then writes the whole script to the 4104 log
    // as a warning at every host start, logging on or off.
    public sealed class Launcher
    {
        public Server Start(EngineIntrinsics context, string hostScriptPath, string assemblySource, DateTime firstLine, string runtimeVariables, bool onWindows, int parentPid, string pipePath, string cacheDirectory)
        {
            return Server.Start(context, hostScriptPath, assemblySource, firstLine, runtimeVariables, onWindows, parentPid, pipePath, cacheDirectory);
        }
    }

    public sealed partial class Server
    {
        // An opt-in timing trace of the host's start and of each request's
        // steps (docs/performance.md, "The first call's phases";
        // bench/host_phases.rb reads it): host.ps1 sets the file
        // PWSHLIB_HOST_TRACE names; empty, as normally, traces nothing.
        // Each line: milliseconds since the process started (to the
        // microsecond), the thread, the phase. Never part of a reply or of
        // the output.
        private static string tracePath;
        private static double traceOffsetMs;
        private static readonly Stopwatch TraceClock = new Stopwatch();
        private static readonly object TraceGate = new object();

        public static void Trace(string phase)
        {
            if (string.IsNullOrEmpty(tracePath)) { return; }
            TraceAt(traceOffsetMs + TraceClock.Elapsed.TotalMilliseconds, phase);
        }

        // The lines are kept in memory and written in batches: a file
        // opened, appended to and closed for each (some 0.02 ms) would be
        // most of the steps a request's trace times (bench/host_phases.rb).
        // Written at the greeting (the start's phases), whenever 64 KB have
        // gathered, when the loop ends and when the process exits: a killed
        // host loses what it had not written.
        private static readonly StringBuilder TraceLines = new StringBuilder();

        private static void TraceAt(double ms, string phase)
        {
            try
            {
                string line = ms.ToString("F3", CultureInfo.InvariantCulture) + " t" + Thread.CurrentThread.ManagedThreadId.ToString(CultureInfo.InvariantCulture) + " " + phase + "\n";
                lock (TraceGate)
                {
                    TraceLines.Append(line);
                    if (TraceLines.Length >= 65536) { WriteTraceLines(); }
                }
            }
            catch (Exception)
            {
            }
        }

        public static void FlushTrace()
        {
            if (string.IsNullOrEmpty(tracePath)) { return; }
            try
            {
                lock (TraceGate) { WriteTraceLines(); }
            }
            catch (Exception)
            {
            }
        }

        // Under TraceGate.
        private static void WriteTraceLines()
        {
            if (TraceLines.Length == 0) { return; }
            string text = TraceLines.ToString();
            TraceLines.Length = 0;
            File.AppendAllText(tracePath, text);
        }

        // The Unix socket listening for the manager (AcceptUnix), closed and
        // its file removed when the host leaves; null on Windows.
        private Socket listener;
        private string listenerPath;

        // What host.ps1 does between loading this assembly and listening,
        // in compiled code: a fresh pwsh runs each new kind of
        // PowerShell statement cold, some 10 to 30 ms apiece on pwsh 7.6.9,
        // a method of this assembly in far less (docs/performance.md, "The
        // host's start in compiled code").
        // * runtimeVariables: the .NET runtime settings the manager added to
        //   this process's environment (comma-separated names,
        //   pwshlib_transport's runtime_settings). Read by the runtime at its
        //   start, they are removed here, before the snapshot every call's
        //   environment goes back to, so that no call and no program a
        //   resource starts inherits them. Only DOTNET_ names are taken.
        // * assemblySource: how host.ps1 got this assembly, told in the
        //   hello ("compiled" or "cached").
        // * firstLine: when host.ps1's first line ran, for the trace, whose
        //   lines count from the process's start.
        // * The home directory is the ProviderPath of the current location,
        //   not its Path: when the host starts in a UNC directory, Path is
        //   the provider-qualified 'Microsoft.PowerShell.Core\FileSystem::\\server\share',
        //   which Environment.CurrentDirectory refuses (the review's N14).
        //   Every call starts there unless its request names a working
        //   directory.
        // * Native programs' output is decoded with Console.OutputEncoding,
        //   which on Windows is the OEM code page unless set: UTF-8, as
        //   pwshlib 2.x set it (the review's N9). Best effort: without a
        //   console Windows may refuse it. Set before the writers below:
        //   .NET drops its own console writer when the encoding changes, but
        //   leaves one set through SetOut alone. Console.Out and
        //   Console.Error then go, for the whole life of the host, to the
        //   buffer of the runspace writing (see ConsoleRouter).
        public static Server Start(EngineIntrinsics context, string hostScriptPath, string assemblySource, DateTime firstLine, string runtimeVariables, bool onWindows, int parentPid, string pipePath, string cacheDirectory)
        {
            AssemblySource = assemblySource;
            // The manager's checked cache directory (host.ps1's
            // -AssemblyCache): the module index keeps what it parsed there.
            DscClasses.CacheDirectory = cacheDirectory;
            foreach (string name in (runtimeVariables ?? string.Empty).Split(','))
            {
                if (name.StartsWith("DOTNET_", StringComparison.Ordinal))
                {
                    Environment.SetEnvironmentVariable(name, null);
                }
            }
            string trace = Environment.GetEnvironmentVariable("PWSHLIB_HOST_TRACE");
            if (!string.IsNullOrEmpty(trace))
            {
                DateTime started;
                using (Process self = Process.GetCurrentProcess()) { started = self.StartTime; }
                traceOffsetMs = (DateTime.Now - started).TotalMilliseconds;
                TraceClock.Start();
                tracePath = trace;
                AppDomain.CurrentDomain.ProcessExit += delegate { FlushTrace(); };
                TraceAt((firstLine - started).TotalMilliseconds, "first line");
                Trace("assembly " + AssemblySource);
            }
            string home = context.SessionState.Path.CurrentFileSystemLocation.ProviderPath;
            Server server = new Server(hostScriptPath, home, onWindows);
            try { Console.OutputEncoding = new UTF8Encoding(false); } catch (Exception) { }
            Console.SetOut(new ConsoleRouter(false, Console.Out));
            Console.SetError(new ConsoleRouter(true, Console.Error));
            // Leave when the Ruby process that started us is gone, so a
            // killed Ruby leaves no host behind.
            if (parentPid > 0) { WatchParent(parentPid, pipePath, onWindows); }
            return server;
        }

        // Elsewhere than Windows: listens on the Unix socket pipePath and
        // accepts the manager's one connection. On Linux only the manager
        // (parentPid, by SO_PEERCRED) may stay connected: another client is
        // closed and the socket waits again; elsewhere
        // the socket's 0700 directory admits this user alone.
        // UnixDomainSocketEndPoint (.NET Core 2.1 and later) is made by
        // reflection: this source also compiles for Windows PowerShell
        // 5.1's .NET Framework, which has no such type and never comes here.
        public Stream AcceptUnix(string pipePath, int parentPid, bool onLinux)
        {
            Type endPointType = typeof(Socket).Assembly.GetType("System.Net.Sockets.UnixDomainSocketEndPoint", true);
            EndPoint endPoint = (EndPoint)Activator.CreateInstance(endPointType, pipePath);
            listenerPath = pipePath;
            listener = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            listener.Bind(endPoint);
            listener.Listen(1);
            Trace("listening");
            while (true)
            {
                Socket connection = listener.Accept();
                string refusal = parentPid <= 0 || !onLinux ? null : PeerCheck.SocketPeerRefusal(connection.Handle, parentPid);
                if (refusal == null)
                {
                    Trace("connected");
                    return new NetworkStream(connection, true);
                }
                Console.Error.WriteLine("pwshlib host: refused a client of " + pipePath + " (" + refusal + "); waiting for the manager");
                connection.Close();
            }
        }

        // Leaves the process when the Ruby process that started the host is
        // gone, so that a killed Ruby leaves no host behind: a background
        // thread polls the PID every 500 ms (Process.GetProcessById, as
        // Get-Process -Id does, throws ArgumentException once it is not
        // running). A thread, not a runspace: a runspace running
        // Start-Sleep and Get-Process loaded two modules at start, beside
        // the first call. Elsewhere than Windows the socket file
        // goes first, and the private directory the manager made for it
        // (only when empty: Directory.Delete refuses one that is not).
        public static void WatchParent(int parentPid, string pipePath, bool onWindows)
        {
            Thread watcher = new Thread(delegate()
            {
                while (true)
                {
                    Thread.Sleep(500);
                    if (ParentRunning(parentPid)) { continue; }
                    if (!onWindows)
                    {
                        try { File.Delete(pipePath); } catch (Exception) { }
                        string directory = Path.GetDirectoryName(pipePath);
                        if (directory != null && Path.GetFileName(directory).StartsWith("pwshlib-", StringComparison.OrdinalIgnoreCase))
                        {
                            try { Directory.Delete(directory); } catch (Exception) { }
                        }
                    }
                    Environment.Exit(0);
                }
            });
            watcher.IsBackground = true;
            watcher.Name = "pwshlib parent watcher";
            watcher.Start();
        }

        private static bool ParentRunning(int parentPid)
        {
            try
            {
                using (Process parent = Process.GetProcessById(parentPid))
                {
                    return true;
                }
            }
            catch (ArgumentException)
            {
                return false;
            }
            catch (InvalidOperationException)
            {
                return false;
            }
        }
    }
}
