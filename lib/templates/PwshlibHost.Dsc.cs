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
        // PWSHLIB_DSC_DIRECT=system: the prelude sends the call through the
        // LCM on Windows PowerShell 5.1 unless the host runs as SYSTEM.
        public bool LcmUnlessSystem;
        public string VendoredPath;
        // A value is a Sensitive leaf bound from the request's secrets (not
        // a credential, which shows as its type's name). The compiled
        // executor's pipelines carry the resource's output, which module
        // logging and transcription record (a Get that echoes its desired
        // state would put the secret there: powershell_logging_spec.rb),
        // so such a call goes the prelude's way, which keeps the output in
        // a variable.
        public bool CarriesSecretLeaf;
    }

    // A DSC call as data (docs/protocol.md, "DSC calls as data"): the
    // core's one value of a call (pwshlib_core::call_data) as JSON, read
    // into the values PowerShell is to bind. Every call comes so, on
    // every route: nothing here reads script text. A script whose text is
    // new (every resource's is) is parsed, compiled and bound anew; this
    // class builds $InvokeParams itself and sets it (as SecretValues sets
    // the secrets: SessionStateProxy.SetVariable, no PowerShell runs for
    // it), and a call the compiled executor does not make runs the one
    // constant Script below, which PowerShell parses once per process
    // (ScriptBlock's cache of parsed scripts, which PowerShell.AddScript
    // goes through).
    public static class DscCall
    {
        // The body of every call the prelude makes, with its optional
        // parameters splatted.
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
            ValueReader reader = new ValueReader(runspace, Member(call, "class_based") is bool && (bool)Member(call, "class_based"));
            Hashtable invokeParams = NewTable();
            invokeParams["Name"] = Text(call, "name");
            invokeParams["Method"] = Text(call, "method");
            Dictionary<string, object> properties = Member(call, "properties") as Dictionary<string, object>;
            if (properties == null) { throw new FormatException("protocol error: the request's dsc has no properties"); }
            invokeParams["Property"] = reader.Table(properties);
            invokeParams["ModuleName"] = Module(Member(call, "module") as Dictionary<string, object>);
            request.InvokeParams = invokeParams;
            request.CarriesSecretLeaf = reader.ReadSecretLeaf;
            string route = Member(call, "route") as string;
            request.ThroughInvokeDscResource = route == "invoke_dsc_resource";
            request.LcmUnlessSystem = route == "lcm_unless_system";
            if (route != null && !request.ThroughInvokeDscResource && !request.LcmUnlessSystem && route != "direct")
            {
                throw new FormatException("protocol error: the request's dsc has an unknown route '" + route + "'");
            }
            if (Member(call, "vendored_path") != null) { request.VendoredPath = Text(call, "vendored_path"); }
            return request;
        }

        // Invoke-DscResource's -ModuleName: the name (or, for a MOF
        // resource with a version, its manifest's path), with the version
        // a hashtable of ModuleName and RequiredVersion.
        private static object Module(Dictionary<string, object> module)
        {
            if (module == null) { throw new FormatException("protocol error: the request's dsc has no module"); }
            string name = Member(module, "path") != null ? Text(module, "path") : Text(module, "name");
            if (Member(module, "version") == null) { return name; }
            Hashtable spec = NewTable();
            spec["ModuleName"] = name;
            spec["RequiredVersion"] = Text(module, "version");
            return spec;
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
            else if (request.LcmUnlessSystem) { arguments["LcmUnlessSystem"] = true; }
            if (request.VendoredPath != null) { arguments["VendoredPath"] = request.VendoredPath; }
            runspace.Set("InvokeParams", request.InvokeParams);
            runspace.Set("PwshlibDscArguments", arguments);
            return (request.InvokeParams["Method"] as string) == "Export" ? ExportDsc.Script : Script;
        }

        internal static object Member(Dictionary<string, object> table, string name)
        {
            object value;
            return table.TryGetValue(name, out value) ? value : null;
        }

        internal static string Text(Dictionary<string, object> table, string name)
        {
            string text = Member(table, name) as string;
            if (text == null) { throw new FormatException("protocol error: the request's dsc." + name + " must be a string"); }
            return text;
        }

        // As @{...} makes one: keys compared without case.
        internal static Hashtable NewTable()
        {
            return new Hashtable(StringComparer.OrdinalIgnoreCase);
        }
    }

    // One call's values, each as PowerShell is to see it: a JSON scalar or
    // array as itself (an integer Int32 when it fits, as the parser types
    // the literal; an array an object[]), an object of one member what its
    // member names (docs/protocol.md, "DSC calls as data").
    internal sealed class ValueReader
    {
        private readonly RunspaceGlobals runspace;
        // A class-based resource on PowerShell 6 and 7: there
        // PSDesiredStateConfiguration 2.x has no LCM and assigns each value
        // to the class instance's property ($resource.$Name = $Value), and
        // PowerShell converts a hashtable to the property's class (not a
        // CIM instance; and pwsh on Linux has no CIM at all). So an embedded
        // instance is a hashtable and a credential in one a PSCredential.
        // Anywhere else (Windows PowerShell 5.1, whose LCM takes embedded
        // instances as CIM instances only; a MOF resource, whose parameters
        // are typed CimInstance) a CIM instance.
        private readonly bool asClass;

        // Whether a value read so far was a bound secret other than a
        // credential.
        internal bool ReadSecretLeaf;

        internal ValueReader(RunspaceGlobals runspace, bool classBased)
        {
            this.runspace = runspace;
            asClass = classBased && IsCore(runspace);
        }

        // $PSVersionTable.PSEdition -eq 'Core', as the prelude asks it.
        private static bool IsCore(RunspaceGlobals runspace)
        {
            IDictionary table = runspace.Get("PSVersionTable") as IDictionary;
            return table != null && string.Equals(table["PSEdition"] as string, "Core", StringComparison.OrdinalIgnoreCase);
        }

        internal Hashtable Table(Dictionary<string, object> members)
        {
            Hashtable table = DscCall.NewTable();
            foreach (KeyValuePair<string, object> member in members)
            {
                table[member.Key] = Value(member.Value);
            }
            return table;
        }

        internal object Value(object node)
        {
            if (node is long)
            {
                long whole = (long)node;
                if (whole >= int.MinValue && whole <= int.MaxValue) { return (int)whole; }
                return whole;
            }
            List<object> items = node as List<object>;
            if (items != null) { return Values(items); }
            Dictionary<string, object> tagged = node as Dictionary<string, object>;
            if (tagged == null) { return node; }
            if (tagged.Count != 1) { throw new FormatException("protocol error: a value of the request's dsc has no one tag"); }
            foreach (KeyValuePair<string, object> tag in tagged)
            {
                return Tagged(tag.Key, tag.Value);
            }
            return null;
        }

        private object[] Values(List<object> items)
        {
            object[] array = new object[items.Count];
            for (int i = 0; i < items.Count; i++) { array[i] = Value(items[i]); }
            return array;
        }

        private object Tagged(string tag, object inner)
        {
            string text = inner as string;
            Dictionary<string, object> members = inner as Dictionary<string, object>;
            List<object> items = inner as List<object>;
            switch (tag)
            {
                case "hash":
                    if (members != null) { return Table(members); }
                    break;
                case "table":
                    if (items != null) { return PairTable(items); }
                    break;
                case "int":
                    if (text != null) { return SecretValues.Integer("of the request's dsc", text); }
                    break;
                case "real":
                    double real;
                    if (text != null && double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) { return real; }
                    break;
                case "datetime":
                    // [DateTime]'...': PowerShell's cast, which converts
                    // with the invariant culture.
                    return LanguagePrimitives.ConvertTo(Value(inner), typeof(DateTime), CultureInfo.InvariantCulture);
                case "typed":
                    if (members != null) { return TypedArray(members); }
                    break;
                case "var":
                    // A variable the request's secrets bound.
                    if (text != null)
                    {
                        object bound = runspace.Get(text);
                        if (!(bound is PSCredential)) { ReadSecretLeaf = true; }
                        return bound;
                    }
                    break;
                case "instance":
                    if (members != null) { return Instance(members); }
                    break;
                case "instances":
                    if (items != null) { return Instances(items); }
                    break;
                case "msft_credential":
                    if (text != null) { return CredentialInstance(text); }
                    break;
            }
            throw new FormatException("protocol error: a value of the request's dsc has an unknown tag '" + tag + "'");
        }

        // A hashtable whose keys are values too (a number, a secret).
        private Hashtable PairTable(List<object> pairs)
        {
            Hashtable table = DscCall.NewTable();
            foreach (object item in pairs)
            {
                List<object> pair = item as List<object>;
                if (pair == null || pair.Count != 2) { throw new FormatException("protocol error: a table entry of the request's dsc must be a [key, value] pair"); }
                table[Value(pair[0])] = Value(pair[1]);
            }
            return table;
        }

        // [uint32[]]@(...): the type name as PowerShell resolves it (its
        // type accelerators included), each item converted as the cast
        // converts it.
        private Array TypedArray(Dictionary<string, object> members)
        {
            string element = members.ContainsKey("type") ? members["type"] as string : null;
            List<object> items = members.ContainsKey("items") ? members["items"] as List<object> : null;
            if (element == null || items == null) { throw new FormatException("protocol error: a typed array of the request's dsc needs a type and items"); }
            Type arrayType = (Type)LanguagePrimitives.ConvertTo(element + "[]", typeof(Type), CultureInfo.InvariantCulture);
            return (Array)LanguagePrimitives.ConvertTo(Values(items), arrayType, CultureInfo.InvariantCulture);
        }

        // One embedded instance: a hashtable for a class on PowerShell 7,
        // else a CIM instance made as New-CimInstance -ClientOnly makes
        // one (CimCmdlets' CimNewCimInstance.CreateCimInstance: new
        // CimInstance(className, "root/cimv2"), then for each entry, its
        // name trimmed, CimProperty.Create(name, value, CimFlags.None),
        // which infers the CIM type from the .NET value and throws
        // ArgumentException where it cannot; the core leaves out what it
        // cannot type).
        private object Instance(Dictionary<string, object> instance)
        {
            string className = DscCall.Text(instance, "class");
            Dictionary<string, object> members = DscCall.Member(instance, "properties") as Dictionary<string, object>;
            if (members == null) { throw new FormatException("protocol error: an instance of the request's dsc has no properties"); }
            Hashtable properties = Table(members);
            if (asClass) { return properties; }
            List<KeyValuePair<string, object>> ordered = new List<KeyValuePair<string, object>>();
            foreach (KeyValuePair<string, object> member in members)
            {
                ordered.Add(new KeyValuePair<string, object>(member.Key.Trim(), properties[member.Key]));
            }
            return CimInstances.New(className, ordered);
        }

        // An array of embedded instances: CimInstance[] (as the script of
        // a MOF resource casts it, and as the LCM takes it), or for a
        // class on PowerShell 7 an object[] PowerShell converts item by
        // item to the property's class array.
        private object Instances(List<object> items)
        {
            object[] values = Values(items);
            if (asClass) { return values; }
            Array typed = Array.CreateInstance(CimInstances.InstanceType(), values.Length);
            for (int i = 0; i < values.Length; i++) { typed.SetValue(values[i], i); }
            return typed;
        }

        // A credential inside an embedded instance, from the PSCredential
        // the secrets bound: an MSFT_Credential CIM instance built from it
        // without a command receiving the password as a string, or for a
        // class on PowerShell 7 the PSCredential itself.
        private object CredentialInstance(string variable)
        {
            PSCredential credential = runspace.Get(variable) as PSCredential;
            if (credential == null) { throw new FormatException("protocol error: the request's dsc names " + variable + ", which holds no credential"); }
            if (asClass) { return credential; }
            return SecretValues.NewCredentialInstance(credential);
        }
    }

    // CIM instances made from .NET, through reflection: this file compiles
    // against System.Management.Automation alone (5.1's Add-Type), and
    // Microsoft.Management.Infrastructure is loaded where CIM exists (the
    // GAC on Windows PowerShell 5.1, $PSHOME on pwsh 7; pwsh on Linux has
    // the assembly but no libmi, so the constructor throws there, as
    // New-CimInstance does).
    internal static class CimInstances
    {
        internal static Type InstanceType()
        {
            return MmiAssembly().GetType("Microsoft.Management.Infrastructure.CimInstance", true);
        }

        // As New-CimInstance -ClientOnly -ClassName className -Property
        // makes it (see ValueReader.Instance).
        internal static object New(string className, IList<KeyValuePair<string, object>> properties)
        {
            Assembly mmi = MmiAssembly();
            Type instanceType = mmi.GetType("Microsoft.Management.Infrastructure.CimInstance", true);
            Type propertyType = mmi.GetType("Microsoft.Management.Infrastructure.CimProperty", true);
            Type flagsType = mmi.GetType("Microsoft.Management.Infrastructure.CimFlags", true);
            object instance;
            try
            {
                instance = Activator.CreateInstance(instanceType, new object[] { className, "root/cimv2" });
            }
            catch (TargetInvocationException e)
            {
                throw e.InnerException ?? e;
            }
            object none = Enum.ToObject(flagsType, 0);
            MethodInfo create = propertyType.GetMethod("Create", new Type[] { typeof(string), typeof(object), flagsType });
            object collection = instanceType.GetProperty("CimInstanceProperties").GetValue(instance, null);
            MethodInfo add = collection.GetType().GetMethod("Add", new Type[] { propertyType });
            foreach (KeyValuePair<string, object> property in properties)
            {
                try
                {
                    add.Invoke(collection, new object[] { create.Invoke(null, new object[] { property.Key, property.Value, none }) });
                }
                catch (TargetInvocationException e)
                {
                    throw e.InnerException ?? e;
                }
            }
            return instance;
        }

        internal static Assembly MmiAssembly()
        {
            foreach (Assembly loaded in AppDomain.CurrentDomain.GetAssemblies())
            {
                if (string.Equals(loaded.GetName().Name, "Microsoft.Management.Infrastructure", StringComparison.OrdinalIgnoreCase)) { return loaded; }
            }
            return Assembly.Load("Microsoft.Management.Infrastructure, Version=1.0.0.0, Culture=neutral, PublicKeyToken=31bf3856ad364e35");
        }
    }

    // A DSC call's secrets, bound as data (docs/protocol.md, "Secrets").
    // PowerShell logs what it compiles and runs: script block
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
        // New-CimInstance -ClientOnly makes one (CimInstances.New), but
        // without handing the password to a command as a string.
        public static object NewCredentialInstance(PSCredential credential)
        {
            if (credential == null) { throw new ArgumentNullException("credential"); }
            List<KeyValuePair<string, object>> properties = new List<KeyValuePair<string, object>>();
            properties.Add(new KeyValuePair<string, object>("UserName", credential.UserName));
            properties.Add(new KeyValuePair<string, object>("Password", credential.GetNetworkCredential().Password));
            return CimInstances.New("MSFT_Credential", properties);
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
    }

    // A runspace's variables and functions, as a call sees them in its
    // global scope. From the loop thread, while the runspace is idle, its
    // SessionStateProxy. From inside a standby pipeline (Standby)
    // the proxy refuses every call, even on that pipeline's own thread
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
