// The host's C#, part 4 of 11 (PwshlibHost.cs lists the parts): a DSC call
// as data made in compiled code (DirectDsc) once the prelude has resolved
// its resource in the runspace.
namespace PwshlibHost
{
    using System;
    using System.Collections;
    using System.Collections.Generic;
    using System.Collections.Specialized;
    using System.Globalization;
    using System.IO;
    using System.Management.Automation;
    using System.Management.Automation.Runspaces;
    using System.Runtime.CompilerServices;
    using System.Text;
    using System.Threading;

    // A direct DSC call, prepared by DirectDsc.Prepare and ended by
    // DirectDsc.Finish.
    public sealed class DirectCall
    {
        internal string Name;
        internal string Method;
        internal bool Strict;
        // The account a direct call on Windows PowerShell 5.1 runs as, when
        // it is not SYSTEM (the identity record); null otherwise.
        internal string Identity;
        // The prelude's function that makes the call, and its parameters.
        internal string Function;
        // A resource's first call in the runspace (FirstCall): the prelude's
        // Invoke-PwshlibDscCall resolves it and makes the call, streams
        // and preferences included; the rest is compiled.
        internal bool First;
        internal CommandInfo Command;
        internal List<KeyValuePair<string, object>> Parameters = new List<KeyValuePair<string, object>>();
        internal Hashtable Seen = new Hashtable(StringComparer.OrdinalIgnoreCase);
        internal object[] Saved;
        // What the call threw (the host sets it from EndInvoke).
        public Exception Failure;
        // Set when a standby's call returned (Standby.Done): the
        // preferences are restored and $LASTEXITCODE read there, while the
        // pipeline may still be ending.
        internal bool Restored;
        internal object LastExitCode;
        // Waits for that pipeline's end, before PowerShell runs here again
        // (null: the pipeline has ended).
        internal Action Settle;
    }

    // The calls after the first of each resource in a runspace:
    // what the prelude's Invoke-PwshlibDscResource does per call, in
    // compiled code, so that a call runs one small constant script around
    // the resource's own method instead of some fifteen interpreted
    // prelude functions (2.7 ms of a warm in-sync Get on pwsh 7.6.9,
    // bench/support/direct_dsc_breakdown.ps1).
    //
    // Only what the prelude has already resolved and loaded runs here: the
    // resource's entry in the prelude's own cache (Get-PwshlibDirectCache,
    // an AppDomain data slot keyed by the runspace), its files unchanged.
    // A resource's first call in a runspace (not resolved there yet, or its
    // module changed on disk) is compiled around the prelude's own
    // Invoke-PwshlibDscCall instead (FirstCall), which resolves and loads
    // it. Everything else (a call through Invoke-DscResource, a run-as
    // credential, Windows PowerShell 5.1 before the prelude has learnt the
    // host's account, a result whose JSON only PowerShell writes alike) goes
    // the prelude's way, which stays the definition of what a call does;
    // spec/real_pwsh/dsc/direct_compiled_spec.rb holds the two to the same
    // answers.
    //
    // The resource's method still runs in PowerShell, through the prelude's
    // own Invoke-PwshlibClassMethod or Invoke-PwshlibScriptMethod (what
    // Invoke-PwshlibDirect calls too), so that its streams, errors,
    // preference variables and $this are what the prelude gave it; what is
    // compiled is the envelope: resolution, arguments, streams, outcome.
    public static class DirectDsc
    {
        // How many calls ran here since the process started (a test reads
        // it through a plain request: one AppDomain).
        private static long calls;

        public static long Calls
        {
            get { return Interlocked.Read(ref calls); }
        }

        private static readonly string[] Preferences = new string[] { "ErrorActionPreference", "VerbosePreference", "DebugPreference", "InformationPreference", "WarningPreference" };

        // The functions of a script resource's module, by method: a
        // module's ExportedCommands is a new dictionary at each read.
        private static readonly ConditionalWeakTable<PSModuleInfo, Dictionary<string, ScriptMethod>> scriptMethods = new ConditionalWeakTable<PSModuleInfo, Dictionary<string, ScriptMethod>>();

        private static int psMajor;

        private sealed class ScriptMethod
        {
            internal CommandInfo Command;
            internal HashSet<string> Parameters;
        }

        // The call, or null when it goes the prelude's way. Never throws:
        // whatever it cannot tell is the prelude's to tell. firstCalls: a
        // resource not resolved in the runspace yet may be called in its
        // first-call form (not through a standby, whose pipeline sets the
        // preferences itself).
        public static DirectCall Prepare(Runspace runspace, DscRequest request, bool firstCalls)
        {
            return Prepare(new RunspaceGlobals(runspace), request, firstCalls);
        }

        internal static DirectCall Prepare(RunspaceGlobals runspace, DscRequest request, bool firstCalls)
        {
            try
            {
                return TryPrepare(runspace, request, firstCalls);
            }
            catch (Exception)
            {
                return null;
            }
        }

        private static DirectCall TryPrepare(RunspaceGlobals runspace, DscRequest request, bool firstCalls)
        {
            if (request.InvokeParams == null) { return null; }
            // PWSHLIB_DSC_DIRECT=system: the prelude decides by edition and
            // account whether the LCM makes the call. A Sensitive leaf:
            // DscRequest.CarriesSecretLeaf says why the prelude makes it.
            if (request.LcmUnlessSystem || request.CarriesSecretLeaf) { return null; }
            // A call through Invoke-DscResource is made in its first-call
            // form (FirstCall): the prelude's Invoke-PwshlibDscCall takes
            // that route itself, and the envelope is compiled as for a
            // direct call.
            bool through = request.ThroughInvokeDscResource;
            if (through && !firstCalls) { return null; }
            string name = request.InvokeParams["Name"] as string;
            string method = request.InvokeParams["Method"] as string;
            Hashtable property = request.InvokeParams["Property"] as Hashtable;
            if (name == null || property == null || property.ContainsKey("PsDscRunAsCredential")) { return null; }
            if (method != "Get" && method != "Test" && method != "Set") { return null; }
            int major = Major(runspace);
            string identity = null;
            if (major <= 5)
            {
                // What the prelude's first call learns once per process
                // (Get-PwshlibNonSystemUser, Clear-PwshlibStaleModulePath).
                identity = AppDomain.CurrentDomain.GetData("pwshlib.identity") as string;
                if (identity == null || AppDomain.CurrentDomain.GetData("pwshlib.modulepath.cleared") == null) { return null; }
                // The LCM runs the resource as SYSTEM: the identity record
                // is a direct call's only.
                if (identity.Length == 0 || through) { identity = null; }
            }
            string modulePath = WithVendoredPath(Environment.GetEnvironmentVariable("PSModulePath"), request.VendoredPath);
            Hashtable entry = through ? null : CachedEntry(runspace, request.InvokeParams, name, modulePath);
            if (entry == null && !firstCalls) { return null; }
            DirectCall call = new DirectCall();
            call.Name = name;
            call.Method = method;
            call.Identity = identity;
            call.Strict = major <= 5;
            object strict = runspace.Get("PwshlibDscStrict");
            if (strict != null) { call.Strict = LanguagePrimitives.IsTrue(strict); }
            string kind = entry == null ? null : Unwrap(entry["Kind"]) as string;
            if (entry == null)
            {
                FirstCall(call, request);
            }
            else if (kind == "Class")
            {
                Type type = Unwrap(entry["Type"]) as Type;
                if (type == null) { return null; }
                call.Function = "Invoke-PwshlibClassMethod";
                call.Parameters.Add(new KeyValuePair<string, object>("Type", type));
                call.Parameters.Add(new KeyValuePair<string, object>("Property", property));
                call.Parameters.Add(new KeyValuePair<string, object>("Method", method));
                call.Parameters.Add(new KeyValuePair<string, object>("Seen", call.Seen));
            }
            else if (kind == "Script")
            {
                PSModuleInfo module = Unwrap(entry["Module"]) as PSModuleInfo;
                if (module == null) { return null; }
                ScriptMethod target = MethodOf(module, method);
                if (target == null) { return null; }
                // Only the parameters the function declares, as the LCM and
                // PSDesiredStateConfiguration pass them (Invoke-PwshlibDirect).
                Hashtable arguments = new Hashtable(StringComparer.OrdinalIgnoreCase);
                foreach (DictionaryEntry pair in property)
                {
                    string key = pair.Key as string;
                    if (key != null && target.Parameters.Contains(key)) { arguments[key] = pair.Value; }
                }
                call.Function = "Invoke-PwshlibScriptMethod";
                call.Parameters.Add(new KeyValuePair<string, object>("Command", target.Command));
                call.Parameters.Add(new KeyValuePair<string, object>("Arguments", arguments));
                call.Parameters.Add(new KeyValuePair<string, object>("Method", method));
                call.Parameters.Add(new KeyValuePair<string, object>("Name", name));
                call.Parameters.Add(new KeyValuePair<string, object>("Strict", call.Strict));
            }
            else
            {
                return null;
            }
            // A prelude of this pwshlib defines it; any other goes its own way.
            call.Command = runspace.Function(call.Function);
            if (call.Command == null) { return null; }
            if (!string.Equals(modulePath, Environment.GetEnvironmentVariable("PSModulePath"), StringComparison.Ordinal))
            {
                // Add-PwshlibVendoredModulePath's change: the host puts the
                // environment back after the reply.
                Environment.SetEnvironmentVariable("PSModulePath", modulePath);
            }
            return call;
        }

        // A resource's first call in the runspace: what the
        // prelude's Invoke-PwshlibDscResource does around
        // Invoke-PwshlibDscCall is done here, as for the calls after it
        // (Finish), and Invoke-PwshlibDscCall itself is called, so that
        // the resolution, the module's import, the preferences, the call
        // and its merged streams are the prelude's, and a resource it does
        // not resolve, or a request through Invoke-DscResource, goes that
        // way there. A fresh host's
        // first call so compiles two prelude functions fewer
        // (Invoke-PwshlibDscResource, Split-PwshlibStreams), nor
        // Add-PwshlibVendoredModulePath (TryPrepare sets PSModulePath), nor
        // the call's script. Its $PwshlibDirect is the request's: it has no
        // run-as credential (TryPrepare), and -LcmUnlessSystem is never
        // part of a call as data.
        private static void FirstCall(DirectCall call, DscRequest request)
        {
            call.First = true;
            call.Function = "Invoke-PwshlibDscCall";
            call.Parameters.Add(new KeyValuePair<string, object>("InvokeParams", request.InvokeParams));
            call.Parameters.Add(new KeyValuePair<string, object>("Direct", !request.ThroughInvokeDscResource));
            call.Parameters.Add(new KeyValuePair<string, object>("Seen", call.Seen));
            if (request.VendoredPath != null) { call.Parameters.Add(new KeyValuePair<string, object>("VendoredPath", request.VendoredPath)); }
            call.Parameters.Add(new KeyValuePair<string, object>("Strict", call.Strict));
        }

        // The major version of the PowerShell running the host.
        private static int Major(RunspaceGlobals runspace)
        {
            if (psMajor == 0)
            {
                Hashtable table = Unwrap(runspace.Get("PSVersionTable")) as Hashtable;
                object version = table == null ? null : Unwrap(table["PSVersion"]);
                object major = version == null ? null : PSObject.AsPSObject(version).Properties["Major"].Value;
                psMajor = Convert.ToInt32(major, CultureInfo.InvariantCulture);
            }
            return psMajor;
        }

        // $env:PSModulePath as Add-PwshlibVendoredModulePath leaves it.
        internal static string WithVendoredPath(string current, string path)
        {
            if (string.IsNullOrEmpty(path)) { return current; }
            char separator = Path.PathSeparator;
            if (Path.DirectorySeparatorChar == '\\') { path = path.Replace('/', '\\'); }
            string wanted = path.TrimEnd('\\', '/');
            foreach (string entry in (current ?? string.Empty).Split(separator))
            {
                // -eq: without regard to case, in the invariant culture.
                if (string.Equals(entry.TrimEnd('\\', '/'), wanted, StringComparison.InvariantCultureIgnoreCase)) { return current; }
            }
            return string.IsNullOrEmpty(current) ? path : current + separator + path;
        }

        // The prelude's entry for the resource (Resolve-PwshlibDscResource's
        // key, with its files unchanged since it was loaded), or null.
        private static Hashtable CachedEntry(RunspaceGlobals runspace, Hashtable invokeParams, string name, string modulePath)
        {
            Hashtable cache = Unwrap(AppDomain.CurrentDomain.GetData("pwshlib.direct." + runspace.InstanceId.ToString())) as Hashtable;
            Hashtable resources = cache == null ? null : Unwrap(cache["Resources"]) as Hashtable;
            if (resources == null) { return null; }
            object moduleName = Unwrap(invokeParams["ModuleName"]);
            IDictionary specification = moduleName as IDictionary;
            object moduleText = specification != null ? Unwrap(specification["ModuleName"]) : moduleName;
            object version = specification != null ? Unwrap(specification["RequiredVersion"]) : null;
            if (!(moduleText is string) || !(version == null || version is string)) { return null; }
            string key = name + "|" + (string)moduleText + "|" + ((string)version ?? string.Empty) + "|" + (modulePath ?? string.Empty);
            Hashtable entry = Unwrap(resources[key]) as Hashtable;
            if (entry == null) { return null; }
            object[] files = Unwrap(entry["Files"]) as object[];
            if (files == null) { return null; }
            long stamp = 0;
            foreach (object file in files)
            {
                string path = Unwrap(file) as string;
                if (path == null) { return null; }
                long ticks = File.GetLastWriteTimeUtc(path).Ticks;
                if (ticks > stamp) { stamp = ticks; }
            }
            object kept = Unwrap(entry["Stamp"]);
            if (kept == null || Convert.ToInt64(kept, CultureInfo.InvariantCulture) != stamp) { return null; }
            return entry;
        }

        private static ScriptMethod MethodOf(PSModuleInfo module, string method)
        {
            Dictionary<string, ScriptMethod> methods = scriptMethods.GetValue(module, delegate(PSModuleInfo unused) { return new Dictionary<string, ScriptMethod>(); });
            lock (methods)
            {
                ScriptMethod found;
                if (methods.TryGetValue(method, out found)) { return found; }
                CommandInfo command;
                if (!module.ExportedCommands.TryGetValue(method + "-TargetResource", out command) || command == null) { return null; }
                found = new ScriptMethod();
                found.Command = command;
                found.Parameters = new HashSet<string>(command.Parameters.Keys, StringComparer.OrdinalIgnoreCase);
                methods[method] = found;
                return found;
            }
        }

        // The call's command, its streams merged into its output in order
        // (as the prelude's *>&1), and the preference variables the resource
        // reads set in the global scope for the call (Invoke-PwshlibDscCall).
        public static void AddTo(DirectCall call, PowerShell ps, Runspace runspace)
        {
            RunspaceGlobals globals = new RunspaceGlobals(runspace);
            if (call.First)
            {
                // What the call's script sets before Invoke-PwshlibDscResource
                // (DscCall.Script), in the global scope where it runs; the
                // function sets the preferences for the call itself and
                // merges the call's streams (*>&1), not the resolution's.
                globals.Set("ErrorActionPreference", ActionPreference.Stop);
                globals.Set("WarningPreference", ActionPreference.SilentlyContinue);
            }
            else
            {
                SetPreferences(call, globals);
            }
            // A function defined once in the runspace, not a script: a
            // script's text given to AddScript is compiled afresh for each
            // pipeline, while a function keeps its compiled form (and
            // PowerShell's caches of its member calls) from call to call:
            // about 1 ms less per call on pwsh 7.6.9, in-process.
            ps.AddCommand(call.Function);
            foreach (KeyValuePair<string, object> parameter in call.Parameters) { ps.AddParameter(parameter.Key, parameter.Value); }
            if (!call.First) { ps.Commands.Commands[0].MergeMyResults(PipelineResultTypes.All, PipelineResultTypes.Output); }
            Interlocked.Increment(ref calls);
        }

        // The preference variables the resource reads, set in the global
        // scope for the call (Invoke-PwshlibDscCall); Finish restores them.
        internal static void SetPreferences(DirectCall call, RunspaceGlobals runspace)
        {
            call.Saved = new object[Preferences.Length];
            for (int i = 0; i < Preferences.Length; i++)
            {
                call.Saved[i] = runspace.Get(Preferences[i]);
                runspace.Set(Preferences[i], ActionPreference.Continue);
            }
        }

        internal static void RestorePreferences(DirectCall call, RunspaceGlobals runspace)
        {
            for (int i = 0; i < Preferences.Length; i++) { runspace.Set(Preferences[i], call.Saved[i]); }
        }

        // The call as a standby pipeline makes it (Wait-PwshlibDirectCall):
        // the function, and its parameters to splat; the preferences set.
        internal static Hashtable ForStandby(DirectCall call, RunspaceGlobals runspace)
        {
            SetPreferences(call, runspace);
            Hashtable arguments = new Hashtable(StringComparer.OrdinalIgnoreCase);
            foreach (KeyValuePair<string, object> parameter in call.Parameters) { arguments[parameter.Key] = parameter.Value; }
            Hashtable made = new Hashtable(StringComparer.OrdinalIgnoreCase);
            made["Command"] = call.Command;
            made["Arguments"] = arguments;
            Interlocked.Increment(ref calls);
            return made;
        }

        // The lines Invoke-PwshlibDscResource would have left: the streams
        // line when the resource wrote to a stream, then the outcome.
        public static string[] Finish(DirectCall call, Runspace runspace, PSDataCollection<PSObject> output)
        {
            if (!call.Restored && call.Saved != null) { RestorePreferences(call, new RunspaceGlobals(runspace)); }
            List<object> values = new List<object>();
            List<object> streams = new List<object>();
            if (call.Identity != null) { streams.Add(StreamRecord("identity", call.Identity)); }
            List<string> errors = Split(output, values, streams);
            string outcome;
            try
            {
                if (call.Failure != null) { throw call.Failure; }
                if (call.Strict && errors.Count > 0)
                {
                    throw new InvalidOperationException("The PowerShell DSC resource '" + call.Name + "' threw one or more non-terminating errors while running the " + call.Method + "-TargetResource functionality: " + string.Join(" ", errors.ToArray()));
                }
                outcome = Outcome(call, runspace, values);
            }
            catch (Exception problem)
            {
                outcome = Failed(call, problem);
            }
            List<string> lines = new List<string>();
            if (streams.Count > 0)
            {
                List<KeyValuePair<string, object>> line = new List<KeyValuePair<string, object>>();
                line.Add(new KeyValuePair<string, object>("pwshlib_streams", streams));
                lines.Add(Json.Write(line));
            }
            lines.Add(outcome);
            return lines.ToArray();
        }

        private static List<KeyValuePair<string, object>> StreamRecord(string kind, string text)
        {
            List<KeyValuePair<string, object>> record = new List<KeyValuePair<string, object>>();
            record.Add(new KeyValuePair<string, object>("kind", kind));
            record.Add(new KeyValuePair<string, object>("text", text ?? string.Empty));
            return record;
        }

        // Split-PwshlibStreams: the records of the merged streams apart from
        // the values. Returns the text of the error records.
        private static List<string> Split(PSDataCollection<PSObject> output, List<object> values, List<object> streams)
        {
            List<string> errors = new List<string>();
            foreach (PSObject item in output)
            {
                object value = item == null ? null : item.BaseObject;
                string kind = null;
                string text = null;
                if (value is WarningRecord) { kind = "warning"; text = ((WarningRecord)value).Message; }
                else if (value is VerboseRecord) { kind = "verbose"; text = ((VerboseRecord)value).Message; }
                else if (value is DebugRecord) { kind = "debug"; text = ((DebugRecord)value).Message; }
                else if (value is InformationRecord)
                {
                    InformationRecord information = (InformationRecord)value;
                    // Write-Host writes an information record tagged PSHOST.
                    kind = information.Tags.Contains("PSHOST") ? "host" : "information";
                    text = (string)LanguagePrimitives.ConvertTo(information.MessageData, typeof(string), CultureInfo.InvariantCulture);
                }
                else if (value is ErrorRecord) { kind = "error"; text = value.ToString(); errors.Add(text); }
                if (kind != null) { streams.Add(StreamRecord(kind, text)); }
                else { values.Add(item); }
            }
            return errors;
        }

        // The outcome from the last value the call wrote (PwshlibResult in
        // Invoke-PwshlibDscResource): Invoke-PwshlibClassMethod and
        // Invoke-PwshlibScriptMethod end a Test with InDesiredState and a
        // Set with RebootRequired.
        private static string Outcome(DirectCall call, Runspace runspace, List<object> values)
        {
            object result = values.Count > 0 ? values[values.Count - 1] : null;
            List<KeyValuePair<string, object>> outcome = new List<KeyValuePair<string, object>>();
            if (call.Method == "Set")
            {
                outcome.Add(new KeyValuePair<string, object>("indesiredstate", true));
                outcome.Add(new KeyValuePair<string, object>("rebootrequired", Member(result, "RebootRequired")));
                outcome.Add(new KeyValuePair<string, object>("errormessage", string.Empty));
                return Json.Write(outcome);
            }
            if (call.Method == "Test")
            {
                outcome.Add(new KeyValuePair<string, object>("indesiredstate", Member(result, "InDesiredState")));
                outcome.Add(new KeyValuePair<string, object>("errormessage", string.Empty));
                return Json.Write(outcome);
            }
            bool returnedThis = LanguagePrimitives.IsTrue(call.Seen["GetReturnedThis"]);
            string written = DirectResult.Write(result, returnedThis);
            if (written != null) { return written; }
            if (call.Settle != null) { call.Settle(); }
            return DirectResult.WriteInPowerShell(runspace, result, returnedThis);
        }

        // [bool] $Result.<Name>: false for no result.
        private static bool Member(object result, string name)
        {
            if (result == null) { return false; }
            PSPropertyInfo property = PSObject.AsPSObject(result).Properties[name];
            return property != null && LanguagePrimitives.IsTrue(property.Value);
        }

        // The outcome of a failed call, as the prelude's catch writes it.
        private static string Failed(DirectCall call, Exception problem)
        {
            Exception exception = problem;
            if (exception is MethodInvocationException && exception.InnerException != null) { exception = exception.InnerException; }
            string message = exception.Message;
            if (string.IsNullOrEmpty(message))
            {
                IContainsErrorRecord holder = problem as IContainsErrorRecord;
                message = "Invoke-DscResource failed: " + (holder != null && holder.ErrorRecord != null ? holder.ErrorRecord.ToString() : problem.ToString());
            }
            List<KeyValuePair<string, object>> outcome = new List<KeyValuePair<string, object>>();
            outcome.Add(new KeyValuePair<string, object>("indesiredstate", false));
            if (call.Method != "Test") { outcome.Add(new KeyValuePair<string, object>("rebootrequired", false)); }
            outcome.Add(new KeyValuePair<string, object>("errormessage", message));
            return Json.Write(outcome);
        }

        internal static object Unwrap(object value)
        {
            PSObject wrapped = value as PSObject;
            if (wrapped != null && !(wrapped.BaseObject is PSCustomObject)) { return wrapped.BaseObject; }
            return value;
        }
    }
}
