// The host's C#, part 3 of 11 (PwshlibHost.cs lists the parts): DSC calls
// as data (DscCall) and secrets bound as variables (SecretValues).
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

    // A DSC call as data, read: $InvokeParams's values and the arguments of
    // Invoke-PwshlibDscResource.
    public sealed class DscRequest
    {
        public Hashtable InvokeParams;
        public bool ThroughInvokeDscResource;
        public string VendoredPath;
    }

    // A DSC call as data (docs/protocol.md, "DSC calls as data"; issue
    // 39): the manager sends the resource, the method, the module and the
    // properties, each value typed as the same literal of the script
    // would be, instead of the call's script text. A script whose text is
    // new (every resource's is) is parsed, compiled and bound anew; this
    // class builds $InvokeParams itself and sets it (as SecretValues sets
    // the secrets: SessionStateProxy.SetVariable, no PowerShell runs for
    // it), and every call runs the one constant Script below. PowerShell
    // caches a compiled script by its text (ScriptBlock's cache of parsed
    // scripts, which PowerShell.AddScript goes through), so that text is
    // parsed once per process. The call itself stays in the prelude
    // (Invoke-PwshlibDscResource), as for a script, until the prelude has
    // resolved the resource in the runspace; then DirectDsc makes it.
    public static class DscCall
    {
        // The body of every generated script, but for its $InvokeParams
        // line, with its optional parameters splatted.
        public const string Script = "$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\nInvoke-PwshlibDscResource -InvokeParams $InvokeParams @PwshlibDscArguments\n";

        // The request's dsc object read into the values of $InvokeParams
        // (after the secrets, which the values may name).
        public static DscRequest Read(Runspace runspace, object data)
        {
            return Read(new RunspaceGlobals(runspace), data);
        }

        internal static DscRequest Read(RunspaceGlobals runspace, object data)
        {
            Dictionary<string, object> call = data as Dictionary<string, object>;
            if (call == null) { throw new FormatException("protocol error: the request's dsc must be an object"); }
            DscRequest request = new DscRequest();
            Hashtable invokeParams = NewTable();
            invokeParams["Name"] = Text(call, "name");
            invokeParams["Method"] = Text(call, "method");
            Dictionary<string, object> properties = Member(call, "properties") as Dictionary<string, object>;
            if (properties == null) { throw new FormatException("protocol error: the request's dsc has no properties"); }
            invokeParams["Property"] = Table(runspace, properties);
            if (!call.ContainsKey("module")) { throw new FormatException("protocol error: the request's dsc has no module"); }
            invokeParams["ModuleName"] = Value(runspace, call["module"]);
            request.InvokeParams = invokeParams;
            request.ThroughInvokeDscResource = Member(call, "through_invoke_dsc_resource") is bool && (bool)Member(call, "through_invoke_dsc_resource");
            if (Member(call, "vendored_path") != null) { request.VendoredPath = Text(call, "vendored_path"); }
            return request;
        }

        // Sets $InvokeParams and $PwshlibDscArguments in the runspace for
        // the prelude's Invoke-PwshlibDscResource; returns the code to run.
        public static string Bind(Runspace runspace, DscRequest request)
        {
            return Bind(new RunspaceGlobals(runspace), request);
        }

        internal static string Bind(RunspaceGlobals runspace, DscRequest request)
        {
            Hashtable arguments = NewTable();
            if (request.ThroughInvokeDscResource) { arguments["ThroughInvokeDscResource"] = true; }
            if (request.VendoredPath != null) { arguments["VendoredPath"] = request.VendoredPath; }
            runspace.Set("InvokeParams", request.InvokeParams);
            runspace.Set("PwshlibDscArguments", arguments);
            return Script;
        }

        private static object Member(Dictionary<string, object> table, string name)
        {
            object value;
            return table.TryGetValue(name, out value) ? value : null;
        }

        private static string Text(Dictionary<string, object> table, string name)
        {
            string text = Member(table, name) as string;
            if (text == null) { throw new FormatException("protocol error: the request's dsc." + name + " must be a string"); }
            return text;
        }

        // As @{...} makes one: keys compared without case.
        private static Hashtable NewTable()
        {
            return new Hashtable(StringComparer.OrdinalIgnoreCase);
        }

        private static Hashtable Table(RunspaceGlobals runspace, Dictionary<string, object> members)
        {
            Hashtable table = NewTable();
            foreach (KeyValuePair<string, object> member in members)
            {
                table[member.Key] = Value(runspace, member.Value);
            }
            return table;
        }

        // One value, as its literal in the script would be: @(...) an
        // object[], an integer Int32 when it fits (the JSON reader gives
        // Int64), a tagged object what its tag says.
        private static object Value(RunspaceGlobals runspace, object node)
        {
            if (node is long)
            {
                long whole = (long)node;
                if (whole >= int.MinValue && whole <= int.MaxValue) { return (int)whole; }
                return whole;
            }
            List<object> items = node as List<object>;
            if (items != null)
            {
                object[] array = new object[items.Count];
                for (int i = 0; i < items.Count; i++) { array[i] = Value(runspace, items[i]); }
                return array;
            }
            Dictionary<string, object> tagged = node as Dictionary<string, object>;
            if (tagged == null) { return node; }
            if (tagged.Count != 1) { throw new FormatException("protocol error: a value of the request's dsc has no one tag"); }
            foreach (KeyValuePair<string, object> tag in tagged)
            {
                return Tagged(runspace, tag.Key, tag.Value);
            }
            return null;
        }

        private static object Tagged(RunspaceGlobals runspace, string tag, object inner)
        {
            string text = inner as string;
            switch (tag)
            {
                case "hash":
                    Dictionary<string, object> members = inner as Dictionary<string, object>;
                    if (members != null) { return Table(runspace, members); }
                    break;
                case "int":
                    if (text != null) { return SecretValues.Integer("of the request's dsc", text); }
                    break;
                case "real":
                    double real;
                    if (text != null && double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
                    break;
                case "datetime":
                    // [DateTime]'...' and [DateTime]$var: PowerShell's cast,
                    // which converts with the invariant culture.
                    return LanguagePrimitives.ConvertTo(Value(runspace, inner), typeof(DateTime), CultureInfo.InvariantCulture);
                case "empty":
                    // [uint32[]]@(): the type name as PowerShell resolves it.
                    if (text != null)
                    {
                        Type arrayType = (Type)LanguagePrimitives.ConvertTo(text + "[]", typeof(Type), CultureInfo.InvariantCulture);
                        return Array.CreateInstance(arrayType.GetElementType(), 0);
                    }
                    break;
                case "var":
                    // A variable the request's secrets bound.
                    if (text != null) { return runspace.Get(text); }
                    break;
            }
            throw new FormatException("protocol error: a value of the request's dsc has an unknown tag '" + tag + "'");
        }
    }

    // A DSC call's secrets, bound as data (docs/protocol.md, "Secrets";
    // issue 38). PowerShell logs what it compiles and runs: script block
    // logging (event 4104) records every script's text, transcription the
    // commands, module logging (event 4103) every parameter a module's
    // command is bound to, and AMSI sees each script. A secret written into
    // the request's code as a literal, or handed to ConvertTo-SecureString
    // as a string, reaches them all. So the manager sends each secret in the
    // request's "secrets" and the code names it by variable; this class
    // sets those variables in the runspace (SessionStateProxy.SetVariable:
    // no PowerShell runs for it), and builds a credential's PSCredential,
    // its password a SecureString, here. The code then runs with no secret
    // in its text and passes no secret to a command as a string.
    public static class SecretValues
    {
        // Binds each secret of a request as a global variable of the
        // runspace, before the code runs. ResetRunspaceState after the
        // reply removes them with every other global variable.
        public static void Bind(Runspace runspace, object secrets)
        {
            Bind(new RunspaceGlobals(runspace), secrets);
        }

        internal static void Bind(RunspaceGlobals runspace, object secrets)
        {
            if (secrets == null) { return; }
            List<object> list = secrets as List<object>;
            if (list == null) { throw new FormatException("the request's secrets must be a list"); }
            foreach (object item in list)
            {
                Dictionary<string, object> secret = item as Dictionary<string, object>;
                if (secret == null) { throw new FormatException("each of the request's secrets must be an object"); }
                string name = Member(secret, "name");
                if (name.Length == 0) { throw new FormatException("a secret of the request has no name"); }
                runspace.Set(name, ValueOf(name, secret));
            }
        }

        private static string Member(Dictionary<string, object> secret, string member)
        {
            object value;
            if (!secret.TryGetValue(member, out value) || value == null) { return string.Empty; }
            return value as string ?? Convert.ToString(value, CultureInfo.InvariantCulture);
        }

        // The value as the same literal would give it in PowerShell. No
        // message here quotes the value: only the variable's name and kind.
        private static object ValueOf(string name, Dictionary<string, object> secret)
        {
            string kind = Member(secret, "kind");
            string text = Member(secret, "value");
            switch (kind)
            {
                case "string":
                    return text;
                case "integer":
                    return Integer(name, text);
                case "real":
                    double real;
                    if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
                    throw new FormatException("the secret variable " + name + " is not a number");
                case "bool":
                    object flag;
                    if (secret.TryGetValue("value", out flag) && flag is bool) { return flag; }
                    throw new FormatException("the secret variable " + name + " is not a boolean");
                case "credential":
                    return Credential(Member(secret, "user"), Member(secret, "password"));
                default:
                    throw new FormatException("the secret variable " + name + " has an unknown kind '" + kind + "'");
            }
        }

        // As PowerShell types an integer literal: Int32, else Int64, else
        // Decimal, else Double (Parser's ScanNumber).
        internal static object Integer(string name, string text)
        {
            NumberStyles sign = NumberStyles.AllowLeadingSign;
            int small;
            if (int.TryParse(text, sign, CultureInfo.InvariantCulture, out small)) { return small; }
            long large;
            if (long.TryParse(text, sign, CultureInfo.InvariantCulture, out large)) { return large; }
            decimal huge;
            if (decimal.TryParse(text, sign, CultureInfo.InvariantCulture, out huge)) { return huge; }
            double real;
            if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
            throw new FormatException("the secret variable " + name + " is not an integer");
        }

        // A PSCredential whose password is a SecureString built here, char
        // by char: no ConvertTo-SecureString, which module logging records
        // with its -String. An empty password is an empty SecureString.
        public static PSCredential Credential(string user, string password)
        {
            SecureString secure = new SecureString();
            foreach (char c in password) { secure.AppendChar(c); }
            secure.MakeReadOnly();
            return new PSCredential(user, secure);
        }

        // An MSFT_Credential CIM instance from a credential, made as
        // New-CimInstance -ClientOnly makes one (CimCmdlets'
        // CimNewCimInstance: new CimInstance(className), then each entry
        // CimProperty.Create(name, value, CimFlags.None), which infers the
        // CIM type from the .NET value), but without handing the password
        // to a command as a string. Through reflection: this file compiles
        // against System.Management.Automation alone (5.1's Add-Type), and
        // Microsoft.Management.Infrastructure is loaded where CIM exists
        // (the GAC on Windows PowerShell 5.1, $PSHOME on pwsh 7; pwsh on
        // Linux has the assembly but no libmi, so the constructor throws
        // there, as New-CimInstance does).
        public static object NewCredentialInstance(PSCredential credential)
        {
            if (credential == null) { throw new ArgumentNullException("credential"); }
            Assembly mmi = CimAssembly();
            Type instanceType = mmi.GetType("Microsoft.Management.Infrastructure.CimInstance", true);
            Type propertyType = mmi.GetType("Microsoft.Management.Infrastructure.CimProperty", true);
            Type flagsType = mmi.GetType("Microsoft.Management.Infrastructure.CimFlags", true);
            object instance = Activator.CreateInstance(instanceType, new object[] { "MSFT_Credential" });
            object none = Enum.ToObject(flagsType, 0);
            MethodInfo create = propertyType.GetMethod("Create", new Type[] { typeof(string), typeof(object), flagsType });
            object properties = instanceType.GetProperty("CimInstanceProperties").GetValue(instance, null);
            MethodInfo add = properties.GetType().GetMethod("Add", new Type[] { propertyType });
            add.Invoke(properties, new object[] { create.Invoke(null, new object[] { "UserName", credential.UserName, none }) });
            add.Invoke(properties, new object[] { create.Invoke(null, new object[] { "Password", credential.GetNetworkCredential().Password, none }) });
            return instance;
        }

        // The PSCredential of an MSFT_Credential CIM instance (what a
        // class-based resource takes where the LCM would have converted it).
        public static PSCredential CredentialOf(object instance)
        {
            if (instance == null) { throw new ArgumentNullException("instance"); }
            object properties = instance.GetType().GetProperty("CimInstanceProperties").GetValue(instance, null);
            string user = string.Empty;
            string password = string.Empty;
            foreach (object property in (System.Collections.IEnumerable)properties)
            {
                Type type = property.GetType();
                string name = Convert.ToString(type.GetProperty("Name").GetValue(property, null), CultureInfo.InvariantCulture);
                string value = Convert.ToString(type.GetProperty("Value").GetValue(property, null), CultureInfo.InvariantCulture);
                if (string.Equals(name, "UserName", StringComparison.OrdinalIgnoreCase)) { user = value; }
                if (string.Equals(name, "Password", StringComparison.OrdinalIgnoreCase)) { password = value; }
            }
            return Credential(user, password);
        }

        private static Assembly CimAssembly()
        {
            foreach (Assembly loaded in AppDomain.CurrentDomain.GetAssemblies())
            {
                if (string.Equals(loaded.GetName().Name, "Microsoft.Management.Infrastructure", StringComparison.OrdinalIgnoreCase)) { return loaded; }
            }
            return Assembly.Load("Microsoft.Management.Infrastructure, Version=1.0.0.0, Culture=neutral, PublicKeyToken=31bf3856ad364e35");
        }
    }

    // A runspace's variables and functions, as a call sees them in its
    // global scope. From the loop thread, while the runspace is idle, its
    // SessionStateProxy. From inside a standby pipeline (Standby, issue
    // 39) the proxy refuses every call, even on that pipeline's own thread
    // ("A pipeline is already running. Concurrent SessionStateProxy method
    // calls are not allowed", pwsh 7.6.9: RunspaceBase's concurrency check
    // on any SessionStateProxy call while a pipeline runs); there the
    // SessionState of Wait-PwshlibDirectCall, each name qualified with
    // "global:" (PSVariable.Set and GetValue read a name as a variable
    // path, SessionStateInternal's VariablePath, so that the qualifier
    // names the scope; tried on pwsh 7.6.9), which is what
    // SessionStateProxy.SetVariable and GetVariable read and write on an
    // idle runspace, whose current scope is the global one.
    public sealed class RunspaceGlobals
    {
        private readonly Runspace runspace;
        private readonly SessionState state;
        private readonly Guid id;

        public RunspaceGlobals(Runspace runspace)
        {
            this.runspace = runspace;
            id = runspace.InstanceId;
        }

        // state: the global scope's, of the runspace whose InstanceId is id.
        public RunspaceGlobals(SessionState state, Guid id)
        {
            this.state = state;
            this.id = id;
        }

        public Guid InstanceId
        {
            get { return id; }
        }

        public object Get(string name)
        {
            return state != null ? state.PSVariable.GetValue("global:" + name) : runspace.SessionStateProxy.GetVariable(name);
        }

        public void Set(string name, object value)
        {
            if (state != null) { state.PSVariable.Set("global:" + name, value); }
            else { runspace.SessionStateProxy.SetVariable(name, value); }
        }

        // The function of that name, or null.
        public CommandInfo Function(string name)
        {
            CommandInvocationIntrinsics commands = state != null ? state.InvokeCommand : runspace.SessionStateProxy.InvokeCommand;
            return commands.GetCommand(name, CommandTypes.Function);
        }
    }
}
