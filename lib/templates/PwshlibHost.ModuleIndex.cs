// The host's C#, part 5 of 11 (PwshlibHost.cs lists the parts): the
// prelude's module index in compiled code (DscModuleIndex) and the
// [DscResource()] classes of a module's files, kept between hosts
// (DscClasses).
namespace PwshlibHost
{
    using System;
    using System.Collections;
    using System.Collections.Generic;
    using System.Globalization;
    using System.IO;
    using System.Management.Automation;
    using System.Management.Automation.Language;
    using System.Text;
    using System.Text.RegularExpressions;

    // The prelude's Get-PwshlibDscModuleIndex in compiled code: which
    // resources a module implements in PowerShell files, as
    // Get-PwshlibDscModuleIndexInPowerShell (its fallback without the host)
    // reads them, from the files and folders Get-PwshlibDscModuleLayout
    // names (the module rules stand there alone): the [DscResource()]
    // classes of its root and nested module files (DscClasses.InFile), the
    // first file naming a class keeping it; in each resource folder, its
    // script-based resources by the FriendlyName of <Class>/<Class>.schema.mof
    // (or the class name), its binary ones (a schema.mof with no .psm1
    // beside it, kept with the schema's path) and its composite ones
    // (<Name>.schema.psm1). The same .NET calls in the same order, the
    // tables compared as PowerShell's @{} compares keys (the current
    // culture, case ignored), the FriendlyName read as -match reads it
    // (case ignored). In PowerShell, run once and cold, this took some 60
    // ms of a fresh host's first call for the test module (pwsh 7.6.9).
    public static class DscModuleIndex
    {
        private static readonly Regex FriendlyName = new Regex("FriendlyName\\s*\\(\\s*\"([^\"]+)\"\\s*\\)", RegexOptions.IgnoreCase);

        // classFiles: the module's .psm1 and .ps1 files that may define
        // classes, root module first; resourceFolders: its DSCResources
        // folders, in any case.
        public static Hashtable Read(string[] classFiles, string[] resourceFolders)
        {
            Hashtable classes = NewTable();
            foreach (string file in classFiles ?? new string[0])
            {
                foreach (string name in DscClasses.InFile(file))
                {
                    if (!classes.ContainsKey(name)) { classes[name] = file; }
                }
            }
            Hashtable scripts = NewTable();
            Hashtable binary = NewTable();
            Hashtable composite = NewTable();
            List<string> unreadable = new List<string>();
            foreach (string folder in resourceFolders ?? new string[0])
            {
                foreach (string schema in FilesUnder(folder, "*.schema.mof", unreadable))
                {
                    string className = WithoutSuffix(Path.GetFileName(schema), ".schema.mof");
                    string psm1 = Path.Combine(Path.GetDirectoryName(schema), className + ".psm1");
                    string friendly = className;
                    Match match = FriendlyName.Match(File.ReadAllText(schema));
                    if (match.Success) { friendly = match.Groups[1].Value; }
                    bool script = File.Exists(psm1);
                    Hashtable found = script ? scripts : binary;
                    string where = script ? psm1 : schema;
                    found[friendly] = where;
                    if (!found.ContainsKey(className)) { found[className] = where; }
                }
                foreach (string configuration in FilesUnder(folder, "*.schema.psm1", unreadable))
                {
                    composite[WithoutSuffix(Path.GetFileName(configuration), ".schema.psm1")] = configuration;
                }
            }
            Hashtable index = NewTable();
            index["Classes"] = classes;
            index["Scripts"] = scripts;
            index["Binary"] = binary;
            index["Composite"] = composite;
            index["Unreadable"] = unreadable.ToArray();
            return index;
        }

        // Directory.GetFiles(folder, pattern, AllDirectories), except that a
        // folder too deep to read is left out and named in unreadable
        // instead of failing the whole index, and with it every resource of
        // the module. GetFiles throws PathTooLongException for one such
        // folder anywhere below: on the .NET Framework of Windows
        // PowerShell 5.1 past MAX_PATH (260 characters) unless long paths
        // are enabled for the process, on .NET Core past the system's
        // limit (PATH_MAX, 4,096 bytes, on Linux: what the real pwsh shows,
        // spec/real_pwsh/dsc/module_index_spec.rb). The usual module takes
        // the one call, in its order; only one with such a folder is walked
        // folder by folder (a folder's own files, then its folders, each
        // in turn, the order of the .NET Framework's enumeration). A
        // resource the index then misses fails its own lookup with the
        // folders named (Assert-PwshlibRunnableResource).
        private static List<string> FilesUnder(string folder, string pattern, List<string> unreadable)
        {
            try
            {
                return new List<string>(Directory.GetFiles(folder, pattern, SearchOption.AllDirectories));
            }
            catch (PathTooLongException)
            {
            }
            List<string> found = new List<string>();
            Walk(folder, pattern, found, unreadable);
            return found;
        }

        private static void Walk(string folder, string pattern, List<string> found, List<string> unreadable)
        {
            string[] folders;
            try
            {
                found.AddRange(Directory.GetFiles(folder, pattern));
                folders = Directory.GetDirectories(folder);
            }
            catch (PathTooLongException)
            {
                if (!unreadable.Contains(folder)) { unreadable.Add(folder); }
                return;
            }
            foreach (string inner in folders)
            {
                Walk(inner, pattern, found, unreadable);
            }
        }

        private static Hashtable NewTable()
        {
            return new Hashtable(StringComparer.CurrentCultureIgnoreCase);
        }

        // What -replace '\.schema\.mof$', '' makes of a name GetFiles found
        // by that ending (a name ending in a line end is no such name).
        private static string WithoutSuffix(string name, string suffix)
        {
            return name.EndsWith(suffix, StringComparison.OrdinalIgnoreCase) ? name.Substring(0, name.Length - suffix.Length) : name;
        }
    }

    // The prelude's Get-PwshlibDscModuleIndex: the classes of a module's
    // syntax tree that carry [DscResource()], as its script block predicate
    // finds them (TypeDefinitionAst, an attribute whose TypeName.Name is
    // DscResource, compared as PowerShell's -eq compares strings: invariant
    // culture, case ignored), in the tree's order, nested ones too. That
    // predicate ran once per node of the tree (3,068 in the test module)
    // in a fresh runspace, some 80 ms of a fresh host's first call (pwsh
    // 7.6.9); compiled, it costs nothing to speak of.
    //
    // InFile also keeps what it found in a file between host processes:
    // a fresh host's first call otherwise parses the module's
    // root file twice, once here and once in its Import-Module (which
    // parses it again: PowerShell's own cache of parsed files only holds
    // the ones its commands parsed), some 20 ms of the test module's first
    // call and far more for a large module. Kept in CacheDirectory (the
    // assembly cache directory the manager checked: nobody else can write
    // it), one file per module file and PowerShell version, and believed
    // only while the module file has the length and last write time it had
    // when it was parsed, as the prelude believes its own cache while a
    // file's last write time holds (Get-PwshlibFileStamp).
    public static class DscClasses
    {
        private const string CacheHeader = "pwshlib dsc classes 1";

        // Where InFile keeps what it found; null or empty: nowhere.
        public static string CacheDirectory { get; set; }

        // The [DscResource()] classes of the PowerShell file at path, from
        // what an earlier host found in the same file unchanged, else
        // parsed now (and kept for the next host).
        public static string[] InFile(string path)
        {
            FileInfo file = new FileInfo(path);
            // Before the parse: a file that changes during it keeps the
            // older stamp, which the next read finds stale.
            long length = file.Length;
            long ticks = file.LastWriteTimeUtc.Ticks;
            string kept = KeptPath(path);
            string[] known = Known(kept, path, length, ticks);
            if (known != null) { return known; }
            Token[] tokens;
            ParseError[] errors;
            string[] names = Find(Parser.ParseFile(path, out tokens, out errors));
            Keep(kept, path, length, ticks, names);
            return names;
        }

        // The file that keeps what was found in path, or null when nothing
        // is kept (no directory, or a path no line can hold).
        private static string KeptPath(string path)
        {
            string directory = CacheDirectory;
            if (string.IsNullOrEmpty(directory) || path.IndexOf('\n') >= 0 || path.IndexOf('\r') >= 0) { return null; }
            // FNV-1a (64 bits) of the path: a name, not a check (the file
            // holds the whole path, compared when read); no SHA-256, whose
            // first use costs a fresh process some 20 ms.
            ulong hash = 14695981039346656037UL;
            foreach (char c in path)
            {
                hash = (hash ^ c) * 1099511628211UL;
            }
            string version = typeof(PSObject).Assembly.GetName().Version.ToString();
            return Path.Combine(directory, "DscClasses-" + version + "-" + hash.ToString("x16", CultureInfo.InvariantCulture) + ".txt");
        }

        // What the kept file says of path at that length and time, or null.
        private static string[] Known(string kept, string path, long length, long ticks)
        {
            if (kept == null) { return null; }
            try
            {
                if (!File.Exists(kept)) { return null; }
                string[] lines = File.ReadAllLines(kept, Encoding.UTF8);
                if (lines.Length < 4 || lines[0] != CacheHeader || !string.Equals(lines[1], path, StringComparison.Ordinal)) { return null; }
                if (lines[2] != length.ToString(CultureInfo.InvariantCulture) || lines[3] != ticks.ToString(CultureInfo.InvariantCulture)) { return null; }
                string[] names = new string[lines.Length - 4];
                Array.Copy(lines, 4, names, 0, names.Length);
                return names;
            }
            catch (Exception)
            {
                return null;
            }
        }

        // Written under a temporary name and renamed into place whole, so
        // that no host reads half a file; a failure keeps nothing.
        private static void Keep(string kept, string path, long length, long ticks, string[] names)
        {
            if (kept == null) { return; }
            string temporary = Path.Combine(Path.GetDirectoryName(kept), "tmp-" + Guid.NewGuid().ToString("N") + ".txt");
            try
            {
                List<string> lines = new List<string>();
                lines.Add(CacheHeader);
                lines.Add(path);
                lines.Add(length.ToString(CultureInfo.InvariantCulture));
                lines.Add(ticks.ToString(CultureInfo.InvariantCulture));
                lines.AddRange(names);
                File.WriteAllLines(temporary, lines.ToArray(), new UTF8Encoding(false));
                if (File.Exists(kept)) { File.Delete(kept); }
                File.Move(temporary, kept);
            }
            catch (Exception)
            {
                try { File.Delete(temporary); } catch (Exception) { }
            }
        }

        public static string[] Find(Ast root)
        {
            List<string> names = new List<string>();
            if (root == null) { return names.ToArray(); }
            foreach (Ast node in root.FindAll(IsDscClass, true))
            {
                names.Add(((TypeDefinitionAst)node).Name);
            }
            return names.ToArray();
        }

        private static bool IsDscClass(Ast node)
        {
            TypeDefinitionAst type = node as TypeDefinitionAst;
            if (type == null) { return false; }
            foreach (AttributeAst attribute in type.Attributes)
            {
                if (string.Compare(attribute.TypeName.Name, "DscResource", CultureInfo.InvariantCulture, CompareOptions.IgnoreCase) == 0) { return true; }
            }
            return false;
        }
    }
}
