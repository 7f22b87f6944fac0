// The host's C#, part 2 of 11 (PwshlibHost.cs lists the parts): the JSON
// the frames carry.
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

    // JSON for the protocol's frames (docs/protocol.md). Objects read as
    // Dictionary<string, object>, arrays as List<object>, strings as string,
    // integers as long, other numbers as double. Written here rather than
    // taken from System.Text.Json (pwsh 7 only) or JavaScriptSerializer
    // (Windows PowerShell 5.1 only): one reader for both, which keeps every
    // string exactly as sent (pwsh 7's ConvertFrom-Json would turn an
    // ISO-date-like string into a DateTime).
    public static class Json
    {
        // Deeper than any message of the protocol (an env pair is at depth 3).
        private const int MaxDepth = 64;

        public static object Parse(string text)
        {
            int at = 0;
            object value = ParseValue(text, ref at, 0);
            SkipSpace(text, ref at);
            if (at != text.Length) { throw Fail("unexpected text after the value", at); }
            return value;
        }

        private static FormatException Fail(string what, int at)
        {
            return new FormatException(what + " at offset " + at.ToString(CultureInfo.InvariantCulture));
        }

        private static void SkipSpace(string text, ref int at)
        {
            while (at < text.Length)
            {
                char c = text[at];
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') { return; }
                at++;
            }
        }

        private static object ParseValue(string text, ref int at, int depth)
        {
            if (depth > MaxDepth) { throw Fail("nesting deeper than " + MaxDepth.ToString(CultureInfo.InvariantCulture), at); }
            SkipSpace(text, ref at);
            if (at >= text.Length) { throw Fail("unexpected end", at); }
            char c = text[at];
            if (c == '{') { return ParseObject(text, ref at, depth); }
            if (c == '[') { return ParseArray(text, ref at, depth); }
            if (c == '"') { return ParseString(text, ref at); }
            if (c == 't') { Literal(text, ref at, "true"); return true; }
            if (c == 'f') { Literal(text, ref at, "false"); return false; }
            if (c == 'n') { Literal(text, ref at, "null"); return null; }
            if (c == '-' || (c >= '0' && c <= '9')) { return ParseNumber(text, ref at); }
            throw Fail("unexpected character", at);
        }

        private static void Literal(string text, ref int at, string word)
        {
            if (string.CompareOrdinal(text, at, word, 0, word.Length) != 0) { throw Fail("unexpected character", at); }
            at += word.Length;
        }

        private static Dictionary<string, object> ParseObject(string text, ref int at, int depth)
        {
            Dictionary<string, object> result = new Dictionary<string, object>(StringComparer.Ordinal);
            at++;
            SkipSpace(text, ref at);
            if (at < text.Length && text[at] == '}') { at++; return result; }
            while (true)
            {
                SkipSpace(text, ref at);
                if (at >= text.Length || text[at] != '"') { throw Fail("expected a property name", at); }
                string name = ParseString(text, ref at);
                SkipSpace(text, ref at);
                if (at >= text.Length || text[at] != ':') { throw Fail("expected ':'", at); }
                at++;
                // A name given twice takes its last value.
                result[name] = ParseValue(text, ref at, depth + 1);
                SkipSpace(text, ref at);
                if (at < text.Length && text[at] == ',') { at++; continue; }
                if (at < text.Length && text[at] == '}') { at++; return result; }
                throw Fail("expected ',' or '}'", at);
            }
        }

        private static List<object> ParseArray(string text, ref int at, int depth)
        {
            List<object> result = new List<object>();
            at++;
            SkipSpace(text, ref at);
            if (at < text.Length && text[at] == ']') { at++; return result; }
            while (true)
            {
                result.Add(ParseValue(text, ref at, depth + 1));
                SkipSpace(text, ref at);
                if (at < text.Length && text[at] == ',') { at++; continue; }
                if (at < text.Length && text[at] == ']') { at++; return result; }
                throw Fail("expected ',' or ']'", at);
            }
        }

        private static string ParseString(string text, ref int at)
        {
            at++;
            StringBuilder result = null;
            int start = at;
            while (true)
            {
                if (at >= text.Length) { throw Fail("unterminated string", at); }
                char c = text[at];
                if (c == '"')
                {
                    string tail = text.Substring(start, at - start);
                    at++;
                    if (result == null) { return tail; }
                    return result.Append(tail).ToString();
                }
                if (c < ' ') { throw Fail("control character in a string", at); }
                if (c != '\\') { at++; continue; }
                if (result == null) { result = new StringBuilder(); }
                result.Append(text, start, at - start);
                at++;
                if (at >= text.Length) { throw Fail("unterminated escape", at); }
                char e = text[at];
                at++;
                switch (e)
                {
                    case '"': result.Append('"'); break;
                    case '\\': result.Append('\\'); break;
                    case '/': result.Append('/'); break;
                    case 'b': result.Append('\b'); break;
                    case 'f': result.Append('\f'); break;
                    case 'n': result.Append('\n'); break;
                    case 'r': result.Append('\r'); break;
                    case 't': result.Append('\t'); break;
                    case 'u':
                        int code;
                        if (at + 4 > text.Length || !int.TryParse(text.Substring(at, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                        {
                            throw Fail("bad \\u escape", at);
                        }
                        result.Append((char)code);
                        at += 4;
                        break;
                    default: throw Fail("bad escape", at - 1);
                }
                start = at;
            }
        }

        private static object ParseNumber(string text, ref int at)
        {
            int start = at;
            bool integral = true;
            if (text[at] == '-') { at++; }
            if (at < text.Length && text[at] == '0') { at++; }
            else if (!Digits(text, ref at)) { throw Fail("bad number", start); }
            if (at < text.Length && text[at] == '.')
            {
                integral = false;
                at++;
                if (!Digits(text, ref at)) { throw Fail("bad number", start); }
            }
            if (at < text.Length && (text[at] == 'e' || text[at] == 'E'))
            {
                integral = false;
                at++;
                if (at < text.Length && (text[at] == '+' || text[at] == '-')) { at++; }
                if (!Digits(text, ref at)) { throw Fail("bad number", start); }
            }
            string literal = text.Substring(start, at - start);
            long whole;
            if (integral && long.TryParse(literal, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out whole))
            {
                return whole;
            }
            return double.Parse(literal, NumberStyles.Float, CultureInfo.InvariantCulture);
        }

        private static bool Digits(string text, ref int at)
        {
            int start = at;
            while (at < text.Length && text[at] >= '0' && text[at] <= '9') { at++; }
            return at > start;
        }

        // Writes a message: an ordered list of fields whose values are
        // null, string, bool, an integer, a double, string[], a List<object>
        // or an OrderedDictionary (a Get's canonical result) of these, or
        // another message.
        public static string Write(object message)
        {
            StringBuilder text = new StringBuilder(256);
            WriteValue(text, message);
            return text.ToString();
        }

        private static void WriteValue(StringBuilder text, object value)
        {
            if (value == null) { text.Append("null"); return; }
            string s = value as string;
            if (s != null) { WriteString(text, s); return; }
            if (value is bool) { text.Append((bool)value ? "true" : "false"); return; }
            if (value is int) { text.Append(((int)value).ToString(CultureInfo.InvariantCulture)); return; }
            if (value is long) { text.Append(((long)value).ToString(CultureInfo.InvariantCulture)); return; }
            if (value is double) { text.Append(((double)value).ToString("R", CultureInfo.InvariantCulture)); return; }
            if (value.GetType().IsPrimitive && !(value is char) && !(value is float) && !(value is IntPtr) && !(value is UIntPtr))
            {
                // The other integers (a DSC result's byte, uint32, ...).
                text.Append(((IFormattable)value).ToString(null, CultureInfo.InvariantCulture));
                return;
            }
            string[] items = value as string[];
            if (items != null)
            {
                text.Append('[');
                for (int i = 0; i < items.Length; i++)
                {
                    if (i > 0) { text.Append(','); }
                    WriteValue(text, items[i]);
                }
                text.Append(']');
                return;
            }
            List<object> list = value as List<object>;
            if (list != null)
            {
                text.Append('[');
                for (int i = 0; i < list.Count; i++)
                {
                    if (i > 0) { text.Append(','); }
                    WriteValue(text, list[i]);
                }
                text.Append(']');
                return;
            }
            System.Collections.Specialized.OrderedDictionary table = value as System.Collections.Specialized.OrderedDictionary;
            if (table != null)
            {
                text.Append('{');
                bool first = true;
                foreach (DictionaryEntry pair in table)
                {
                    if (!first) { text.Append(','); }
                    first = false;
                    WriteString(text, Convert.ToString(pair.Key, CultureInfo.InvariantCulture));
                    text.Append(':');
                    WriteValue(text, pair.Value);
                }
                text.Append('}');
                return;
            }
            List<KeyValuePair<string, object>> fields = value as List<KeyValuePair<string, object>>;
            if (fields != null)
            {
                text.Append('{');
                for (int i = 0; i < fields.Count; i++)
                {
                    if (i > 0) { text.Append(','); }
                    WriteString(text, fields[i].Key);
                    text.Append(':');
                    WriteValue(text, fields[i].Value);
                }
                text.Append('}');
                return;
            }
            WriteString(text, Convert.ToString(value, CultureInfo.InvariantCulture));
        }

        // A UTF-16 surrogate without its partner (a resource that cut a
        // string in half) becomes U+FFFD: a strict JSON reader refuses an
        // escaped lone surrogate, and the frame's UTF-8 could not hold it.
        private static void WriteString(StringBuilder text, string value)
        {
            text.Append('"');
            for (int i = 0; i < value.Length; i++)
            {
                char c = value[i];
                if (char.IsHighSurrogate(c))
                {
                    if (i + 1 < value.Length && char.IsLowSurrogate(value[i + 1]))
                    {
                        text.Append(c).Append(value[i + 1]);
                        i++;
                    }
                    else
                    {
                        text.Append('\uFFFD');
                    }
                    continue;
                }
                if (char.IsLowSurrogate(c)) { text.Append('\uFFFD'); continue; }
                switch (c)
                {
                    case '"': text.Append("\\\""); break;
                    case '\\': text.Append("\\\\"); break;
                    case '\n': text.Append("\\n"); break;
                    case '\r': text.Append("\\r"); break;
                    case '\t': text.Append("\\t"); break;
                    default:
                        if (c < ' ')
                        {
                            text.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        }
                        else
                        {
                            text.Append(c);
                        }
                        break;
                }
            }
            text.Append('"');
        }
    }
}
