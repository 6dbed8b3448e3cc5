export declare function generate(doc: unknown, source?: string): Promise<Record<string, string>>;
export declare function runEventKinds(doc: unknown, source?: string): string[];
