// The host's C#, part 7 of 11 (PwshlibHost.cs lists the parts): a Get's
// result written as JSON in compiled code (DirectResult), for DirectDsc.
namespace PwshlibHost
{
    using System;
    using System.Collections;
    using System.Collections.Generic;
    using System.Collections.Specialized;
    using System.Globalization;
    using System.Management.Automation;
    using System.Management.Automation.Runspaces;

    // A Get's result as ConvertTo-PwshlibCanonicalResult and ConvertTo-Json
    // write it (dsc_prelude_results.ps1 is the definition), for the values
    // whose JSON is certain: text, booleans, integers, enums, dates, tables,
    // collections and instances of PowerShell classes of those. A value it
    // does not know (a PSCustomObject, a CIM instance, a floating-point
    // number, whose JSON differs between ConvertTo-Json's editions, or one
    // deeper than the prelude goes) makes Write answer null, and the result
    // is written by the prelude's own functions (WriteInPowerShell).
    public static class DirectResult
    {
        private sealed class Unknown : Exception
        {
        }

        private static readonly string[] Skipped = new string[] { "PSComputerName", "CimClass", "CimInstanceProperties", "CimSystemProperties" };

        private const string InPowerShell = "param($PwshlibResult, $PwshlibThis)\n$ErrorActionPreference = 'Stop'\n$PwshlibTable = ConvertTo-PwshlibCanonicalResult -Result $PwshlibResult\nif ($PwshlibThis) { $PwshlibTable['pwshlib_get_returned_this'] = $true }\n$global:PwshlibDscResultLine = ConvertTo-Json -InputObject $PwshlibTable -Compress -Depth 10\n";

        // Also called by the prelude's own Get (Invoke-PwshlibDscResource:
        // a resource's first call in a runspace, before the host makes its
        // calls), so that the first call of a fresh host runs neither
        // ConvertTo-PwshlibCanonicalResult nor ConvertTo-Json for it, each
        // compiled cold there. Null: the prelude's functions
        // write it.
        public static string Write(object result, bool returnedThis)
        {
            try
            {
                OrderedDictionary table = Canonical(result);
                if (returnedThis) { table["pwshlib_get_returned_this"] = true; }
                return Json.Write(table);
            }
            catch (Exception)
            {
                return null;
            }
        }

        // Write for the prelude's own Get, its result read from the variable
        // $PwshlibDscResult where the prelude called this (the current scope
        // of state): a .NET method called from script hands AMSI each of
        // its arguments as text on PowerShell 7.3+ (method-invocation
        // logging, PowerShell/PowerShell#16496), and a Get's result may
        // hold what the system keeps secret.
        public static string WriteVariable(SessionState state, bool returnedThis)
        {
            return Write(state.PSVariable.GetValue("PwshlibDscResult"), returnedThis);
        }

        // The prelude's functions on the result, in the call's runspace
        // (idle again): the line comes back through a variable, never the
        // pipeline's output, which transcription records.
        internal static string WriteInPowerShell(Runspace runspace, object result, bool returnedThis)
        {
            PowerShell ps = PowerShell.Create();
            try
            {
                ps.Runspace = runspace;
                ps.AddScript(InPowerShell, true).AddArgument(result).AddArgument(returnedThis);
                ps.Invoke();
                object line = DirectDsc.Unwrap(runspace.SessionStateProxy.GetVariable("PwshlibDscResultLine"));
                runspace.SessionStateProxy.SetVariable("PwshlibDscResultLine", null);
                if (!(line is string)) { throw new InvalidOperationException("ConvertTo-Json wrote no line for the result"); }
                return (string)line;
            }
            finally
            {
                ps.Dispose();
            }
        }

        private static OrderedDictionary NewTable()
        {
            // [ordered]@{}: keys without regard to case.
            return new OrderedDictionary(StringComparer.CurrentCultureIgnoreCase);
        }

        private static OrderedDictionary Canonical(object result)
        {
            OrderedDictionary table = NewTable();
            if (result == null) { return table; }
            object bare = DirectDsc.Unwrap(result);
            if (IsCim(bare)) { throw new Unknown(); }
            List<string> names = new List<string>();
            List<object> values = new List<object>();
            IDictionary dictionary = bare as IDictionary;
            if (dictionary != null)
            {
                foreach (DictionaryEntry pair in dictionary) { names.Add(Text(pair.Key)); values.Add(pair.Value); }
            }
            else
            {
                foreach (PSPropertyInfo property in PSObject.AsPSObject(result).Properties) { names.Add(property.Name); values.Add(property.Value); }
            }
            for (int i = 0; i < names.Count; i++)
            {
                if (Array.Exists(Skipped, delegate(string skipped) { return string.Equals(skipped, names[i], StringComparison.OrdinalIgnoreCase); })) { continue; }
                object value = DirectDsc.Unwrap(values[i]);
                string text = value as string;
                if (text != null)
                {
                    value = text.Length == 0 ? null : text;
                }
                else if (value != null && !IsPlainPrimitive(value))
                {
                    value = Value(value, 1);
                }
                if (value == null && string.Equals(names[i], "Ensure", StringComparison.OrdinalIgnoreCase)) { value = "Present"; }
                table[names[i]] = value;
            }
            return table;
        }

        // A primitive the prelude leaves as it is, whose JSON is certain.
        private static bool IsPlainPrimitive(object value)
        {
            if (!value.GetType().IsPrimitive || value is char) { return false; }
            if (value is double || value is float || value is IntPtr || value is UIntPtr) { throw new Unknown(); }
            return true;
        }

        private static bool IsCim(object value)
        {
            return value != null && value.GetType().FullName == "Microsoft.Management.Infrastructure.CimInstance";
        }

        // ConvertTo-PwshlibCanonicalValue.
        private static object Value(object node, int depth)
        {
            object value = DirectDsc.Unwrap(node);
            if (value == null) { return null; }
            if (depth > 8 || value is PSObject || IsCim(value)) { throw new Unknown(); }
            string text = value as string;
            if (text != null) { return text.Length == 0 ? null : text; }
            if (value is Enum) { return value.ToString(); }
            if (value is DateTime) { return ((DateTime)value).ToUniversalTime().ToString("o", CultureInfo.InvariantCulture); }
            PSCredential credential = value as PSCredential;
            if (credential != null)
            {
                OrderedDictionary user = NewTable();
                user["user"] = credential.UserName;
                user["password"] = null;
                return user;
            }
            if (value.GetType().Assembly.IsDynamic && !(value is IEnumerable))
            {
                // An instance of a PowerShell class: its properties and its
                // class name as cim_instance_type.
                OrderedDictionary instance = NewTable();
                foreach (PSPropertyInfo property in PSObject.AsPSObject(value).Properties) { instance[property.Name] = Value(property.Value, depth + 1); }
                instance["cim_instance_type"] = value.GetType().Name;
                return instance;
            }
            IDictionary dictionary = value as IDictionary;
            if (dictionary != null)
            {
                OrderedDictionary table = NewTable();
                foreach (DictionaryEntry pair in dictionary) { table[Text(pair.Key)] = Value(pair.Value, depth + 1); }
                return table;
            }
            IEnumerable items = value as IEnumerable;
            if (items != null)
            {
                List<object> converted = new List<object>();
                foreach (object item in items) { converted.Add(Value(item, depth + 1)); }
                return converted.Count == 0 ? null : converted;
            }
            if (IsPlainPrimitive(value)) { return value; }
            if (value is decimal) { throw new Unknown(); }
            if (value is DateTimeOffset) { return ((DateTimeOffset)value).UtcDateTime.ToString("o", CultureInfo.InvariantCulture); }
            return Text(value);
        }

        // A [string] cast: PowerShell's conversion, in the invariant culture.
        private static string Text(object value)
        {
            return (string)LanguagePrimitives.ConvertTo(value, typeof(string), CultureInfo.InvariantCulture);
        }
    }
}
